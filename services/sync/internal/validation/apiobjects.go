package validation

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// noAPIServer says why a reference cannot be served.
const noAPIServer = "needs an API server to read it from: splitlet-sync runs without --kubeconfig"

// ValidateNoAPIObjects returns an error for every reference of pod to an
// object only an API server holds — configMaps and secrets in volumes
// (also projected), env and envFrom, image pull secrets and projected
// service-account tokens —
// each naming its field. Sync applies it where no API server is configured,
// so such a pod is rejected before anything starts instead of failing at
// container start. Optional references are refused too: without an API
// server the object can never appear.
func ValidateNoAPIObjects(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for i, vol := range pod.Spec.Volumes {
		p := spec.Child("volumes").Index(i)
		switch {
		case vol.ConfigMap != nil:
			errs = append(errs, field.Forbidden(p.Child("configMap"), noAPIServer))
		case vol.Secret != nil:
			errs = append(errs, field.Forbidden(p.Child("secret"), noAPIServer))
		case vol.Projected != nil:
			for j, src := range vol.Projected.Sources {
				sp := p.Child("projected", "sources").Index(j)
				switch {
				case src.ConfigMap != nil:
					errs = append(errs, field.Forbidden(sp.Child("configMap"), noAPIServer))
				case src.Secret != nil:
					errs = append(errs, field.Forbidden(sp.Child("secret"), noAPIServer))
				case src.ServiceAccountToken != nil:
					errs = append(errs, field.Forbidden(sp.Child("serviceAccountToken"), noAPIServer))
				}
			}
		}
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		errs = append(errs, field.Forbidden(spec.Child("imagePullSecrets").Index(i), fmt.Sprintf("secret %q %s", ref.Name, noAPIServer)))
	}
	for _, group := range []struct {
		name       string
		containers []v1.Container
	}{{"initContainers", pod.Spec.InitContainers}, {"containers", pod.Spec.Containers}} {
		for i, c := range group.containers {
			errs = append(errs, containerAPIObjects(spec.Child(group.name).Index(i), c.EnvFrom, c.Env)...)
		}
	}
	for i, c := range pod.Spec.EphemeralContainers {
		errs = append(errs, containerAPIObjects(spec.Child("ephemeralContainers").Index(i), c.EnvFrom, c.Env)...)
	}
	return errs
}

func containerAPIObjects(p *field.Path, envFrom []v1.EnvFromSource, env []v1.EnvVar) field.ErrorList {
	var errs field.ErrorList
	for i, from := range envFrom {
		switch {
		case from.ConfigMapRef != nil:
			errs = append(errs, field.Forbidden(p.Child("envFrom").Index(i).Child("configMapRef"), noAPIServer))
		case from.SecretRef != nil:
			errs = append(errs, field.Forbidden(p.Child("envFrom").Index(i).Child("secretRef"), noAPIServer))
		}
	}
	for i, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		switch {
		case e.ValueFrom.ConfigMapKeyRef != nil:
			errs = append(errs, field.Forbidden(p.Child("env").Index(i).Child("valueFrom", "configMapKeyRef"), noAPIServer))
		case e.ValueFrom.SecretKeyRef != nil:
			errs = append(errs, field.Forbidden(p.Child("env").Index(i).Child("valueFrom", "secretKeyRef"), noAPIServer))
		}
	}
	return errs
}
