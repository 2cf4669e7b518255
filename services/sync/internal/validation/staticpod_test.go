package validation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kubelet's HasAPIObjectReference, applied to static pods under
// PreventStaticPodAPIReferences.
func TestStaticPodAPIReference(t *testing.T) {
	vol := func(src v1.VolumeSource) []v1.Volume { return []v1.Volume{{Name: "v", VolumeSource: src}} }
	projected := func(srcs ...v1.VolumeProjection) []v1.Volume {
		return vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: srcs}})
	}
	container := func(envFrom []v1.EnvFromSource, env []v1.EnvVar) []v1.Container {
		return []v1.Container{{Name: "c", EnvFrom: envFrom, Env: env}}
	}
	for _, tc := range []struct {
		desc   string
		spec   v1.PodSpec
		field  string // "" when the pod is fine
		detail string
	}{
		{desc: "no references", spec: v1.PodSpec{
			Volumes: append(vol(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}),
				v1.Volume{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}},
				v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{}}}}}}),
			Containers: container(nil, []v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}),
		}},
		{desc: "service account", spec: v1.PodSpec{ServiceAccountName: "sa"},
			field: "spec.serviceAccountName", detail: "static pods may not reference serviceaccounts"},
		{desc: "deprecated service account", spec: v1.PodSpec{DeprecatedServiceAccount: "sa"},
			field: "spec.serviceAccount", detail: "static pods may not reference serviceaccounts"},
		{desc: "image pull secret", spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "reg"}}},
			field: "spec.imagePullSecrets[0]", detail: "static pods may not reference secrets"},
		{desc: "secretKeyRef in an ephemeral container", spec: v1.PodSpec{EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "e", Env: []v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k"}}}}}}}},
			field: "spec.ephemeralContainers[0].env[0].valueFrom.secretKeyRef", detail: "static pods may not reference secrets"},
		{desc: "secrets before configmaps", spec: v1.PodSpec{Containers: container(
			[]v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
			[]v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k"}}}})},
			field: "spec.containers[0].env[0].valueFrom.secretKeyRef", detail: "static pods may not reference secrets"},
		{desc: "envFrom configMapRef", spec: v1.PodSpec{Containers: container(
			[]v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}, nil)},
			field: "spec.containers[0].envFrom[0]", detail: "static pods may not reference configmaps"},
		{desc: "secret volume", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}})},
			field: "spec.volumes[0].secret.secretName", detail: "static pods may not reference secrets"},
		{desc: "secret volume without a name", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{}})},
			field: "spec.volumes[0].secret", detail: "static pods may not reference secrets (via secret volumes)"},
		{desc: "configMap volume", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}})},
			field: "spec.volumes[0].configMap.name", detail: "static pods may not reference configmaps"},
		{desc: "cephfs with a secret", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{CephFS: &v1.CephFSVolumeSource{SecretRef: &v1.LocalObjectReference{Name: "s"}}})},
			field: "spec.volumes[0].cephfs.secretRef", detail: "static pods may not reference secrets"},
		{desc: "cephfs without a secret", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{CephFS: &v1.CephFSVolumeSource{Monitors: []string{"m"}}})}},
		{desc: "resource claims", spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpu"}}},
			field: "spec.resourceClaims", detail: "static pods may not reference resourceclaims"},
		{desc: "persistent volume claim", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}})},
			field: "spec.volumes[0].persistentVolumeClaim", detail: "static pods may not reference persistentvolumeclaims"},
		{desc: "ephemeral volume", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}})},
			field: "spec.volumes[0].ephemeral", detail: "static pods may not reference persistentvolumeclaims (via ephemeral volumes)"},
		{desc: "CSI volume", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d"}})},
			field: "spec.volumes[0].csi", detail: "static pods may not reference csidrivers (via CSI volumes)"},
		{desc: "projected service-account token", spec: v1.PodSpec{Volumes: projected(
			v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{}}, v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}})},
			field: "spec.volumes[0].projected.sources[1].serviceAccountToken", detail: "static pods may not reference serviceaccounts (via projected volumes)"},
		{desc: "projected secret", spec: v1.PodSpec{Volumes: projected(v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}})},
			field: "spec.volumes[0].projected.sources[0].secret", detail: "static pods may not reference secrets"},
		{desc: "cluster trust bundle", spec: v1.PodSpec{Volumes: projected(v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}})},
			field: "spec.volumes[0].projected.sources[0].clusterTrustBundle", detail: "static pods may not reference clustertrustbundles"},
		{desc: "pod certificate", spec: v1.PodSpec{Volumes: projected(v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{SignerName: "x/y"}})},
			field: "spec.volumes[0].projected.sources[0].podCertificate", detail: "static pods may not reference podcertificates"},
		{desc: "volume with no source", spec: v1.PodSpec{Volumes: vol(v1.VolumeSource{})},
			field: "spec.volumes[0]", detail: "unknown volume type"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := StaticPodAPIReference(&v1.Pod{Spec: tc.spec})
			if tc.field == "" {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if got == nil || got.Field != tc.field || got.Detail != tc.detail {
				t.Fatalf("got %v, want %s: %s", got, tc.field, tc.detail)
			}
			if tc.detail != "unknown volume type" && got.Type != field.ErrorTypeForbidden {
				t.Errorf("type %s, want Forbidden", got.Type)
			}
		})
	}
}
