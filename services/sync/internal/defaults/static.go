package defaults

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations the kubelet puts on pods it did not get from the API server
// (pkg/kubelet/types/pod_update.go); mirror pods and `kubectl describe`
// read them, so the keys are kept.
const (
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	ConfigHashAnnotationKey   = "kubernetes.io/config.hash"
	ConfigSeenAnnotationKey   = "kubernetes.io/config.seen"
	ConfigMirrorAnnotationKey = v1.MirrorPodAnnotationKey
)

// SourceKind names a pod source the way the kubelet does in the
// config.source annotation.
type SourceKind string

const (
	// SourceFile is a manifest directory or file (static pods).
	SourceFile SourceKind = "file"
	// SourceHTTP is a manifest URL.
	SourceHTTP SourceKind = "http"
	// SourceAPI is the API server; its pods already have a UID and name.
	SourceAPI SourceKind = "api"
)

// Source says where a pod was read from.
type Source struct {
	Kind SourceKind
	// Location is the file path or the URL; it seeds the UID so that the
	// same manifest in two places makes two pods.
	Location string
}

// now is replaced in tests.
var now = time.Now

// ApplyStaticPodDefaults completes a pod read from a file or URL, as the
// kubelet's applyDefaults (pkg/kubelet/config/common.go) does before it
// validates such a pod:
//   - an empty UID becomes a hash of the pod's content, the node name and the
//     file path (or of the content and the URL), so re-reading an unchanged
//     manifest yields the same UID and any change yields a new one;
//   - the name gets "-<node name in lower case>" appended, so static pods of
//     different nodes do not collide in the API server;
//   - namespace "default" when empty, spec.nodeName set to this node;
//   - annotations config.hash (the UID), config.source (the source kind)
//     and config.seen (first time seen, RFC 3339, kept if already set);
//   - for files, a toleration of every NoExecute taint, so node problems do
//     not evict static pods;
//   - status.phase Pending.
//
// Call it once per read, after SetDefaults_Pod (the kubelet hashes the
// decoded, defaulted object) and before validation.ValidatePod. It is not
// idempotent: the node suffix is appended on every call.
func ApplyStaticPodDefaults(pod *v1.Pod, source Source, nodeName string) error {
	if pod.UID == "" {
		uid, err := staticPodUID(pod, source, nodeName)
		if err != nil {
			return err
		}
		pod.UID = uid
	}
	pod.Name = fmt.Sprintf("%s-%s", pod.Name, strings.ToLower(nodeName))
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName

	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ConfigHashAnnotationKey] = string(pod.UID)
	pod.Annotations[ConfigSourceAnnotationKey] = string(source.Kind)
	if _, ok := pod.Annotations[ConfigSeenAnnotationKey]; !ok {
		pod.Annotations[ConfigSeenAnnotationKey] = now().UTC().Format(time.RFC3339Nano)
	}

	if source.Kind == SourceFile {
		addOrUpdateToleration(&pod.Spec, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	}
	pod.Status.Phase = v1.PodPending
	return nil
}

// staticPodUID hashes the content first and the origin after it, as the
// kubelet does (its DeepHashObject resets the hasher, so the origin must
// come second). The kubelet hashes a spew dump of its internal type; JSON
// of the v1 object is deterministic (map keys sorted) and serves the same
// purpose, so UIDs are stable but differ from a kubelet's.
func staticPodUID(pod *v1.Pod, source Source, nodeName string) (types.UID, error) {
	content, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("hash pod %q: %w", pod.Name, err)
	}
	h := fnv.New128a()
	h.Write(content)
	if source.Kind == SourceFile {
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", source.Location)
	} else {
		fmt.Fprintf(h, "url:%s", source.Location)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil))), nil
}

// addOrUpdateToleration matches helper.AddOrUpdateTolerationInPod: a
// toleration equal in key, operator, value and effect is replaced, any
// other is appended.
func addOrUpdateToleration(spec *v1.PodSpec, t v1.Toleration) {
	for i := range spec.Tolerations {
		if spec.Tolerations[i].MatchToleration(&t) {
			spec.Tolerations[i] = t
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, t)
}

// SystemCriticalPriority is the lowest priority of critical pods
// (scheduling.SystemCriticalPriority: system-cluster-critical;
// system-node-critical is above it).
const SystemCriticalPriority int32 = 2 * 1000000000

// IsCriticalPod is the kubelet's kubetypes.IsCriticalPod: a static pod (any
// source but the API server's), a mirror pod, or one of system-critical
// priority.
func IsCriticalPod(pod *v1.Pod) bool {
	if src := pod.Annotations[ConfigSourceAnnotationKey]; src != "" && src != string(SourceAPI) {
		return true
	}
	if _, ok := pod.Annotations[ConfigMirrorAnnotationKey]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// IsNodeCriticalPod is the kubelet's kubetypes.IsNodeCriticalPod: critical
// and in the system-node-critical priority class.
func IsNodeCriticalPod(pod *v1.Pod) bool {
	return pod.Spec.PriorityClassName == "system-node-critical" && IsCriticalPod(pod)
}
