// Package kuberuntime decides and carries out what the container runtime must
// do to make a pod match its spec: the kubelet's pkg/kubelet/kuberuntime,
// rebuilt for sync.
//
// The decision core is pure: computePodActions looks at
// a pod spec, the runtime's view of the pod (container.PodStatus) and the
// latest probe results, and returns PodActions: kill the pod or not, create a
// sandbox or not, which containers to kill and which to start. It performs no
// runtime call, so every kubelet rule it encodes is table-tested. SyncPod
// carries the actions out and is where restart back-off (CrashLoopBackOff) is
// checked, the same split as the kubelet's. Manager (kuberuntime_manager.go)
// holds the CRI clients and implements SyncPod, KillPod, GetPodStatus and the
// generators of sandbox and container configs.
//
// Usage sketch (inside SyncPod):
//
//	actions := computePodActions(ctx, pod, podStatus, probes, restartAllContainers)
//	if actions.KillPod { /* stop containers and sandbox */ }
//	for id, info := range actions.ContainersToKill { /* stop id, info.Message */ }
//	for _, r := range actions.ContainersToReset { /* kill if r.Kill, then remove r.ContainerID */ }
//	if actions.CreateSandbox { /* RunPodSandbox, attempt actions.Attempt */ }
//	/* start EphemeralContainersToStart, InitContainersToStart, ContainersToStart */
package kuberuntime
