package manifest

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// quantityErrors finds the quantities of a pod document that do not parse,
// by their field paths: container and pod resources, overhead, emptyDir
// size limits. It reads the document loosely, so it works on one the typed
// decoder refused.
func quantityErrors(raw []byte) field.ErrorList {
	var doc struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	for _, kind := range []string{"initContainers", "containers", "ephemeralContainers"} {
		var containers []struct {
			Resources resourceLists `json:"resources"`
		}
		if json.Unmarshal(doc.Spec[kind], &containers) != nil {
			continue
		}
		for i, c := range containers {
			errs = append(errs, c.Resources.errors(spec.Child(kind).Index(i).Child("resources"))...)
		}
	}
	var podResources resourceLists
	if json.Unmarshal(doc.Spec["resources"], &podResources) == nil {
		errs = append(errs, podResources.errors(spec.Child("resources"))...)
	}
	var overhead map[string]any
	if json.Unmarshal(doc.Spec["overhead"], &overhead) == nil {
		errs = append(errs, listErrors(overhead, spec.Child("overhead"))...)
	}
	var volumes []struct {
		EmptyDir *struct {
			SizeLimit any `json:"sizeLimit"`
		} `json:"emptyDir"`
	}
	if json.Unmarshal(doc.Spec["volumes"], &volumes) == nil {
		for i, v := range volumes {
			if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
				errs = append(errs, quantityError(v.EmptyDir.SizeLimit, spec.Child("volumes").Index(i).Child("emptyDir", "sizeLimit"))...)
			}
		}
	}
	return errs
}

type resourceLists struct {
	Limits   map[string]any `json:"limits"`
	Requests map[string]any `json:"requests"`
}

func (r resourceLists) errors(p *field.Path) field.ErrorList {
	return append(listErrors(r.Limits, p.Child("limits")), listErrors(r.Requests, p.Child("requests"))...)
}

// listErrors checks a resource list's values in name order.
func listErrors(list map[string]any, p *field.Path) field.ErrorList {
	names := make([]string, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs field.ErrorList
	for _, name := range names {
		errs = append(errs, quantityError(list[name], p.Child(name))...)
	}
	return errs
}

// quantityError is v's error as a quantity: a string or a number that
// resource.ParseQuantity takes, as Quantity's own decoder.
func quantityError(v any, p *field.Path) field.ErrorList {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = fmt.Sprint(x)
	default:
		return field.ErrorList{field.Invalid(p, v, "must be a quantity, a string or a number")}
	}
	if _, err := resource.ParseQuantity(s); err != nil {
		return field.ErrorList{field.Invalid(p, s, err.Error())}
	}
	return nil
}
