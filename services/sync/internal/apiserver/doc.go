// Package apiserver connects splitlet-sync to a Kubernetes API server, for
// the DaemonSet deployment in which splitlet plays a node's kubelet:
//
//   - PodSource watches the pods bound to this node (field selector
//     spec.nodeName) with a client-go informer and hands the full set to the
//     config mux under the source name "apiserver" on every change, as the
//     kubelet's config/apiserver.go does;
//   - StatusManager writes the statuses the pod workers generate back through
//     the pods/status subresource, batched through a dirty set and retried
//     periodically and on conflict (the kubelet's status_manager), and
//     deletes a deleted pod's object once it has terminated (grace 0, UID
//     precondition);
//   - NodeRegistrar registers the Node (labels, a taint that keeps pods not
//     asking for splitlet away, capacity, conditions), renews its Lease in
//     kube-node-lease and refreshes the node status;
//   - Objects reads the ConfigMaps, Secrets and Services of the pods' env
//     and volumes (a watch per object, a Services informer) and their
//     service account tokens (TokenRequest, renewed at 80% of a lifetime):
//     kuberuntime's ObjectGetter.
//
// Usage sketch:
//
//	client, _ := apiserver.NewClient(kubeconfig)
//	sm := apiserver.NewStatusManager(client, podManager, apiserver.StatusOptions{})
//	mirrors := apiserver.NewMirrorManager(client, node, podManager, sm.Requeue)
//	go mirrors.Run(ctx) // mirror pods of the static pods
//	go apiserver.NewPodSource(client, node, podConfig, mirrors).Run(ctx)
//	go sm.Run(ctx) // and register sm as the "apiserver" Finalizer
//	go apiserver.NewNodeRegistrar(client, apiserver.NodeOptions{Name: node}).Run(ctx)
//	objects := apiserver.NewObjects(client, apiserver.ObjectsOptions{})
//	go objects.Run(ctx) // and pass it as kuberuntime.EnvOptions.Objects
package apiserver

// SourceName is the config mux's name for the API server source. The
// PodService source already took the kubelet's "api".
const SourceName = "apiserver"

// KubeAPIQPS and KubeAPIBurst bound sync's requests to the API server, as
// the kubelet's defaults (KubeletConfiguration kubeAPIQPS, kubeAPIBurst).
const (
	KubeAPIQPS   = 50
	KubeAPIBurst = 100
)
