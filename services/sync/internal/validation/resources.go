package validation

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateContainerResources matches ValidateContainerResourceRequirements:
// valid resource names, non-negative quantities (whole numbers for extended
// resources), requests no greater than limits, and requests equal to limits
// for resources that cannot be overcommitted (hugepages, extended
// resources), which also need a limit.
func validateContainerResources(r *v1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	hasCPUOrMemory, hasHugePages := false, false

	for _, name := range sortedNames(r.Limits) {
		q := r.Limits[name]
		p := limPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, p)...)
		allErrs = append(allErrs, validateQuantity(name, q, p)...)
		hasCPUOrMemory = hasCPUOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
		hasHugePages = hasHugePages || isHugePages(name)
	}
	for _, name := range sortedNames(r.Requests) {
		q := r.Requests[name]
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, p)...)
		allErrs = append(allErrs, validateQuantity(name, q, p)...)
		if lim, ok := r.Limits[name]; ok {
			switch {
			case q.Cmp(lim) != 0 && !isOvercommitAllowed(name):
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
			case q.Cmp(lim) > 0:
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		} else if !isOvercommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		hasCPUOrMemory = hasCPUOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
		hasHugePages = hasHugePages || isHugePages(name)
	}
	if hasHugePages && !hasCPUOrMemory {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return allErrs
}

// validatePodResources matches validatePodResources (PodLevelResources on)
// for names, quantities and requests <= limits: only cpu, memory and
// hugepages may be set at pod level.
func validatePodResources(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	r := spec.Resources
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(r.Claims) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	supported := []string{string(v1.ResourceCPU), string(v1.ResourceMemory), v1.ResourceHugePagesPrefix + "*"}
	check := func(list v1.ResourceList, p *field.Path) {
		for _, name := range sortedNames(list) {
			np := p.Key(string(name))
			if name != v1.ResourceCPU && name != v1.ResourceMemory && !isHugePages(name) {
				allErrs = append(allErrs, field.NotSupported(np, name, supported))
				continue
			}
			allErrs = append(allErrs, validateQuantity(name, list[name], np)...)
		}
	}
	check(r.Limits, fldPath.Child("limits"))
	check(r.Requests, fldPath.Child("requests"))
	for _, name := range sortedNames(r.Requests) {
		if lim, ok := r.Limits[name]; ok {
			if q := r.Requests[name]; q.Cmp(lim) > 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("requests"), q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		}
	}
	return allErrs
}

// validateContainerResourceName matches validateContainerResourceName:
// unprefixed names must be standard container resources; prefixed names
// outside kubernetes.io must be valid extended resource names.
func validateContainerResourceName(name v1.ResourceName, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	if !strings.Contains(string(name), "/") {
		if !isStandardContainerResource(name) {
			return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource for containers")}
		}
		return nil
	}
	if !isNativeResource(name) && !isExtendedResourceName(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "doesn't follow extended resource name standard")}
	}
	return nil
}

// validateQuantity matches ValidateResourceQuantityValue.
func validateQuantity(name v1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	if isExtendedResourceName(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), "must be an integer"))
	}
	return allErrs
}

func isStandardContainerResource(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return true
	}
	return isHugePages(name)
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// isNativeResource: unprefixed or in the kubernetes.io domain.
func isNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// isExtendedResourceName matches helper.IsExtendedResourceName.
func isExtendedResourceName(name v1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// isOvercommitAllowed: native resources other than hugepages.
func isOvercommitAllowed(name v1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}

// sortedNames keeps error order stable across runs.
func sortedNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
