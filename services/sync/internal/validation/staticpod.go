package validation

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StaticPodAPIReference returns nil, or an error naming the first field by
// which a static pod references an object of the Kubernetes API. With
// PreventStaticPodAPIReferences (Beta, on by default in v1.36) the kubelet's
// file and HTTP sources reject such a pod after validating it
// (tryDecodeSinglePod, tryDecodePodList): a static pod runs whether or not
// the API server is reachable, and the node must not use it to read
// objects. What counts is the kubelet's HasAPIObjectReference, checked in
// its order: a service account, Secrets, ConfigMaps, ResourceClaims, then
// volumes needing the API (PVCs, ephemeral, CSI, glusterFS, projected
// service-account tokens, ClusterTrustBundles, pod certificates). The
// message is the kubelet's ("static pods may not reference secrets"); the
// field is splitlet's addition.
//
// The API source (PodService) plays the API server's part and is not
// checked here.
func StaticPodAPIReference(pod *v1.Pod) *field.Error {
	spec := field.NewPath("spec")
	forbid := func(p *field.Path, resource string) *field.Error {
		return field.Forbidden(p, "static pods may not reference "+resource)
	}
	// The v1 spellings of the internal ServiceAccountName, which the
	// kubelet checks after conversion.
	if pod.Spec.ServiceAccountName != "" {
		return forbid(spec.Child("serviceAccountName"), "serviceaccounts")
	}
	if pod.Spec.DeprecatedServiceAccount != "" {
		return forbid(spec.Child("serviceAccount"), "serviceaccounts")
	}
	if p := podSecretReference(pod, spec); p != nil {
		return forbid(p, "secrets")
	}
	if p := podConfigMapReference(pod, spec); p != nil {
		return forbid(p, "configmaps")
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return forbid(spec.Child("resourceClaims"), "resourceclaims")
	}
	for i, v := range pod.Spec.Volumes {
		p := spec.Child("volumes").Index(i)
		switch {
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil, v.GCEPersistentDisk != nil,
			v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil, v.NFS != nil, v.PhotonPersistentDisk != nil,
			v.PortworxVolume != nil, v.Quobyte != nil, v.RBD != nil, v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
			// No API object, or its Secret was caught above.
		case v.ConfigMap != nil:
			return forbid(p.Child("configMap"), "configmaps (via configmap volumes)")
		case v.Secret != nil:
			return forbid(p.Child("secret"), "secrets (via secret volumes)")
		case v.CSI != nil:
			return forbid(p.Child("csi"), "csidrivers (via CSI volumes)")
		case v.Glusterfs != nil:
			return forbid(p.Child("glusterfs"), "endpoints (via glusterFS volumes)")
		case v.PersistentVolumeClaim != nil:
			return forbid(p.Child("persistentVolumeClaim"), "persistentvolumeclaims")
		case v.Ephemeral != nil:
			return forbid(p.Child("ephemeral"), "persistentvolumeclaims (via ephemeral volumes)")
		case v.AzureFile != nil:
			return forbid(p.Child("azureFile"), "secrets (via azureFile volumes)")
		case v.Projected != nil:
			for j, s := range v.Projected.Sources {
				sp := p.Child("projected", "sources").Index(j)
				switch {
				case s.ConfigMap != nil:
					return forbid(sp.Child("configMap"), "configmaps (via projected volumes)")
				case s.Secret != nil:
					return forbid(sp.Child("secret"), "secrets (via projected volumes)")
				case s.ServiceAccountToken != nil:
					return forbid(sp.Child("serviceAccountToken"), "serviceaccounts (via projected volumes)")
				case s.ClusterTrustBundle != nil:
					return forbid(sp.Child("clusterTrustBundle"), "clustertrustbundles")
				case s.PodCertificate != nil:
					return forbid(sp.Child("podCertificate"), "podcertificates")
				case s.DownwardAPI != nil:
				default:
					return field.Invalid(sp, "", "unknown source for projected volume "+v.Name)
				}
			}
		default:
			return field.Invalid(p, v.Name, "unknown volume type")
		}
	}
	return nil
}

// podSecretReference returns the first field naming a Secret, in the order
// of the kubelet's VisitPodSecretNames (empty names skipped): image pull
// secrets, each container's envFrom and env, then volumes.
func podSecretReference(pod *v1.Pod, spec *field.Path) *field.Path {
	for i, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name != "" {
			return spec.Child("imagePullSecrets").Index(i)
		}
	}
	if p := containerReference(pod, spec, func(from v1.EnvFromSource) bool {
		return from.SecretRef != nil && from.SecretRef.Name != ""
	}, func(src *v1.EnvVarSource) (string, bool) {
		return "secretKeyRef", src.SecretKeyRef != nil && src.SecretKeyRef.Name != ""
	}); p != nil {
		return p
	}
	named := func(ref *v1.LocalObjectReference) bool { return ref != nil && ref.Name != "" }
	for i, v := range pod.Spec.Volumes {
		p := spec.Child("volumes").Index(i)
		switch {
		case v.AzureFile != nil:
			if v.AzureFile.SecretName != "" {
				return p.Child("azureFile", "secretName")
			}
		case v.CephFS != nil:
			if named(v.CephFS.SecretRef) {
				return p.Child("cephfs", "secretRef")
			}
		case v.Cinder != nil:
			if named(v.Cinder.SecretRef) {
				return p.Child("cinder", "secretRef")
			}
		case v.FlexVolume != nil:
			if named(v.FlexVolume.SecretRef) {
				return p.Child("flexVolume", "secretRef")
			}
		case v.Projected != nil:
			for j, s := range v.Projected.Sources {
				if s.Secret != nil && s.Secret.Name != "" {
					return p.Child("projected", "sources").Index(j).Child("secret")
				}
			}
		case v.RBD != nil:
			if named(v.RBD.SecretRef) {
				return p.Child("rbd", "secretRef")
			}
		case v.Secret != nil:
			if v.Secret.SecretName != "" {
				return p.Child("secret", "secretName")
			}
		case v.ScaleIO != nil:
			if named(v.ScaleIO.SecretRef) {
				return p.Child("scaleIO", "secretRef")
			}
		case v.ISCSI != nil:
			if named(v.ISCSI.SecretRef) {
				return p.Child("iscsi", "secretRef")
			}
		case v.StorageOS != nil:
			if named(v.StorageOS.SecretRef) {
				return p.Child("storageos", "secretRef")
			}
		case v.CSI != nil:
			if named(v.CSI.NodePublishSecretRef) {
				return p.Child("csi", "nodePublishSecretRef")
			}
		}
	}
	return nil
}

// podConfigMapReference returns the first field naming a ConfigMap, in the
// order of the kubelet's VisitPodConfigmapNames (empty names skipped).
func podConfigMapReference(pod *v1.Pod, spec *field.Path) *field.Path {
	if p := containerReference(pod, spec, func(from v1.EnvFromSource) bool {
		return from.ConfigMapRef != nil && from.ConfigMapRef.Name != ""
	}, func(src *v1.EnvVarSource) (string, bool) {
		return "configMapKeyRef", src.ConfigMapKeyRef != nil && src.ConfigMapKeyRef.Name != ""
	}); p != nil {
		return p
	}
	for i, v := range pod.Spec.Volumes {
		p := spec.Child("volumes").Index(i)
		switch {
		case v.Projected != nil:
			for j, s := range v.Projected.Sources {
				if s.ConfigMap != nil && s.ConfigMap.Name != "" {
					return p.Child("projected", "sources").Index(j).Child("configMap")
				}
			}
		case v.ConfigMap != nil:
			if v.ConfigMap.Name != "" {
				return p.Child("configMap", "name")
			}
		}
	}
	return nil
}

// containerReference returns the first envFrom or env entry of any
// container (init, regular, ephemeral, as the kubelet's VisitContainers
// goes) that fromRef or envRef picks.
func containerReference(pod *v1.Pod, spec *field.Path, fromRef func(v1.EnvFromSource) bool, envRef func(*v1.EnvVarSource) (string, bool)) *field.Path {
	check := func(p *field.Path, envFrom []v1.EnvFromSource, env []v1.EnvVar) *field.Path {
		for i, from := range envFrom {
			if fromRef(from) {
				return p.Child("envFrom").Index(i)
			}
		}
		for i, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if name, ok := envRef(e.ValueFrom); ok {
				return p.Child("env").Index(i).Child("valueFrom", name)
			}
		}
		return nil
	}
	for i, c := range pod.Spec.InitContainers {
		if p := check(spec.Child("initContainers").Index(i), c.EnvFrom, c.Env); p != nil {
			return p
		}
	}
	for i, c := range pod.Spec.Containers {
		if p := check(spec.Child("containers").Index(i), c.EnvFrom, c.Env); p != nil {
			return p
		}
	}
	for i, c := range pod.Spec.EphemeralContainers {
		if p := check(spec.Child("ephemeralContainers").Index(i), c.EnvFrom, c.Env); p != nil {
			return p
		}
	}
	return nil
}
