package validation

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/splitlet/splitlet/internal/qos"
)

// updatablePodSpecFields is the API server's list, quoted in the error.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
	"`spec.containers[*].resources` and `spec.initContainers[*].resources` (cpu and memory only: an in-place resize)",
}

// ValidatePodUpdate checks that newPod is valid on its own and is a legal
// update of oldPod, as the API server's ValidatePodUpdate does. What it
// checks:
//   - metadata: apimachinery's ValidateObjectMetaUpdate (name, namespace,
//     uid, creation timestamp immutable), except that an empty
//     resourceVersion is accepted; the mirror-pod annotation may not be
//     added or removed;
//   - the whole new pod with ValidatePod;
//   - containers and init containers may not be added or removed; their
//     image may change (and must not be empty);
//   - activeDeadlineSeconds may be set from nil or lowered, never raised or
//     removed;
//   - tolerations may only be added (tolerationSeconds of an existing one
//     may change);
//   - terminationGracePeriodSeconds may go from negative to 1;
//   - containers' cpu and memory requests and limits may change, as the
//     resize subresource allows (ValidatePodResize): none may be removed,
//     no other resource may change, and the QoS class must stay; a static
//     pod may not be resized. PodService has apply only, so an apply is
//     also its resize;
//   - any other spec change is Forbidden on `spec`, naming the changed
//     fields.
//
// Not checked (the node does not act on them): scheduling gates, node
// affinity of gated pods, ephemeral containers (their own subresource).
func ValidatePodUpdate(newPod, oldPod *v1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	// apimachinery requires a resourceVersion on update; pods from a
	// manifest file or URL have none, so an empty one is not an error here.
	newMeta := newPod.ObjectMeta.DeepCopy()
	if newMeta.ResourceVersion == "" {
		newMeta.ResourceVersion = oldPod.ResourceVersion
		if newMeta.ResourceVersion == "" {
			newMeta.ResourceVersion = "0"
		}
	}
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(newMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, ValidatePod(newPod)...)
	allErrs = append(allErrs, validateMirrorAnnotationUpdate(newPod, oldPod, metaPath.Child("annotations"))...)

	specPath := field.NewPath("spec")
	errs, stop := validateContainerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = validateContainerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}

	deadlinePath := specPath.Child("activeDeadlineSeconds")
	if newDeadline := newPod.Spec.ActiveDeadlineSeconds; newDeadline != nil {
		if *newDeadline < 0 || *newDeadline > math.MaxInt32 {
			return append(allErrs, field.Invalid(deadlinePath, *newDeadline, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old := oldPod.Spec.ActiveDeadlineSeconds; old != nil && *old < *newDeadline {
			return append(allErrs, field.Invalid(deadlinePath, *newDeadline, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(deadlinePath, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	allErrs = append(allErrs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)

	if equality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return allErrs
	}
	// Undo the allowed changes on a copy; whatever still differs is not allowed.
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	if resizeErrs, resized := validatePodResize(newPod, oldPod, specPath); resized {
		allErrs = append(allErrs, resizeErrs...)
		for i := range munged.Containers {
			munged.Containers[i].Resources = oldPod.Spec.Containers[i].Resources
		}
		for i := range munged.InitContainers {
			munged.InitContainers[i].Resources = oldPod.Spec.InitContainers[i].Resources
		}
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.Tolerations = oldPod.Spec.Tolerations
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	if changed := changedSpecFields(munged, &oldPod.Spec); len(changed) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s; changed: %s",
			strings.Join(updatablePodSpecFields, ","), strings.Join(changed, ", "))))
	}
	return allErrs
}

// validatePodResize checks a change of containers' resources as the API
// server's ValidatePodResize does (its container part: no pod-level
// resources, which sync does not resize); resized says whether any
// container's resources changed at all.
func validatePodResize(newPod, oldPod *v1.Pod, specPath *field.Path) (allErrs field.ErrorList, resized bool) {
	check := func(newList, oldList []v1.Container, path *field.Path) {
		for i := range newList {
			n, o := &newList[i].Resources, &oldList[i].Resources
			if equality.Semantic.DeepEqual(n, o) {
				continue
			}
			resized = true
			p := path.Index(i).Child("resources")
			allErrs = append(allErrs, validateContainerResize(n, o, p)...)
		}
	}
	check(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	check(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	if !resized {
		return nil, false
	}
	if _, ok := oldPod.Annotations[v1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}, true
	}
	if qos.ComputePodQOS(oldPod) != qos.ComputePodQOS(newPod) {
		allErrs = append(allErrs, field.Invalid(specPath, qos.ComputePodQOS(newPod), "Pod QOS Class may not change as a result of resizing"))
	}
	return allErrs, true
}

// validateContainerResize matches the API server's validateContainerResize
// plus its rule that only cpu and memory are resizable.
func validateContainerResize(n, o *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	removed := func(newList, oldList v1.ResourceList) bool {
		for name := range oldList {
			if _, ok := newList[name]; !ok {
				return true
			}
		}
		return false
	}
	if removed(n.Requests, o.Requests) {
		allErrs = append(allErrs, field.Forbidden(path.Child("requests"), "resource requests cannot be removed"))
	}
	if removed(n.Limits, o.Limits) {
		allErrs = append(allErrs, field.Forbidden(path.Child("limits"), "resource limits cannot be removed"))
	}
	others := func(r *v1.ResourceRequirements) v1.ResourceRequirements {
		out := v1.ResourceRequirements{Claims: r.Claims}
		for _, l := range []struct{ in, out *v1.ResourceList }{{&r.Requests, &out.Requests}, {&r.Limits, &out.Limits}} {
			for name, q := range *l.in {
				if name == v1.ResourceCPU || name == v1.ResourceMemory {
					continue
				}
				if *l.out == nil {
					*l.out = v1.ResourceList{}
				}
				(*l.out)[name] = q
			}
		}
		return out
	}
	if !equality.Semantic.DeepEqual(others(n), others(o)) {
		allErrs = append(allErrs, field.Forbidden(path, "only cpu and memory resources are mutable"))
	}
	return allErrs
}

// validateContainerUpdates matches ValidateContainerUpdates.
func validateContainerUpdates(newContainers, oldContainers []v1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	if len(newContainers) != len(oldContainers) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	var allErrs field.ErrorList
	for i, c := range newContainers {
		if c.Image == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
	}
	return allErrs, false
}

// validateOnlyAddedTolerations matches validateOnlyAddedTolerations.
func validateOnlyAddedTolerations(newTolerations, oldTolerations []v1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTolerations {
		found := false
		for _, nt := range newTolerations {
			o := old
			o.TolerationSeconds = nt.TolerationSeconds
			if equality.Semantic.DeepEqual(o, nt) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

func validateMirrorAnnotationUpdate(newPod, oldPod *v1.Pod, fldPath *field.Path) field.ErrorList {
	const key = v1.MirrorPodAnnotationKey
	oldVal, oldOK := oldPod.Annotations[key]
	newVal, newOK := newPod.Annotations[key]
	switch {
	case oldOK && (!newOK || newVal != oldVal):
		return field.ErrorList{field.Forbidden(fldPath.Key(key), "may not remove or update mirror pod annotation")}
	case !oldOK && newOK:
		return field.ErrorList{field.Forbidden(fldPath.Key(key), "may not add mirror pod annotation")}
	}
	return nil
}

// changedSpecFields names the top-level spec fields that differ; the API
// server prints a full diff, a list of names is enough to act on.
func changedSpecFields(a, b *v1.PodSpec) []string {
	var changed []string
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	t := va.Type()
	for i := 0; i < t.NumField(); i++ {
		if !equality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			changed = append(changed, "spec."+jsonName(t.Field(i)))
		}
	}
	return changed
}
