package validation

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// splitlet's own bounds on one pod. The API server bounds a pod only by its
// encoded size (3 MiB, which sync's PodService enforces too); a node agent
// holds every container of a pod in memory in three processes, so sync
// bounds what one pod may make it hold (issue 22: one pod of 1000
// containers grew the gateway to 1.1 GB).
const (
	// MaxContainersPerPod bounds init, regular and ephemeral containers
	// together.
	MaxContainersPerPod = 100
	// MaxEnvPerContainer bounds env and envFrom entries of one container.
	MaxEnvPerContainer = 1000
)

// validateBounds refuses pods over splitlet's bounds, naming the list.
func validateBounds(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if n := len(spec.InitContainers) + len(spec.Containers) + len(spec.EphemeralContainers); n > MaxContainersPerPod {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("containers"), n, MaxContainersPerPod))
	}
	check := func(kind string, i int, c *v1.Container) {
		if n := len(c.Env) + len(c.EnvFrom); n > MaxEnvPerContainer {
			allErrs = append(allErrs, field.TooMany(fldPath.Child(kind).Index(i).Child("env"), n, MaxEnvPerContainer))
		}
	}
	for i := range spec.InitContainers {
		check("initContainers", i, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		check("containers", i, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		check("ephemeralContainers", i, (*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return allErrs
}
