package validation

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestValidateNoAPIObjects(t *testing.T) {
	optional := true
	for _, tc := range []struct {
		desc  string
		pod   v1.PodSpec
		field string // "" when the pod is fine
	}{
		{desc: "emptyDir and downward API need nothing", pod: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "a", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "b", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}}},
			Containers: []v1.Container{{Name: "c", Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		}},
		{desc: "configMap volume", field: "spec.volumes[0].configMap", pod: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "a", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}}},
		{desc: "projected token", field: "spec.volumes[0].projected.sources[1].serviceAccountToken", pod: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "a", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{DownwardAPI: &v1.DownwardAPIProjection{}}, {ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}}}}}}}}},
		{desc: "optional secretKeyRef in an init container", field: "spec.initContainers[0].env[0].valueFrom.secretKeyRef", pod: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i", Env: []v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{
				SecretKeyRef: &v1.SecretKeySelector{Key: "k", Optional: &optional}}}}}}}},
		{desc: "image pull secret", field: "spec.imagePullSecrets[0]", pod: v1.PodSpec{
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "registry"}}}},
		{desc: "envFrom configMapRef", field: "spec.containers[0].envFrom[0].configMapRef", pod: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{}}}}}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			errs := ValidateNoAPIObjects(&v1.Pod{Spec: tc.pod})
			if tc.field == "" {
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Error(), "--kubeconfig") {
				t.Errorf("errors %v, want one naming %s and --kubeconfig", errs, tc.field)
			}
		})
	}
}
