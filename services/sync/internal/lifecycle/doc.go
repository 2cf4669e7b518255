// Package lifecycle runs containers' lifecycle hooks (postStart and
// preStop: exec, httpGet, sleep) the way the kubelet's
// pkg/kubelet/lifecycle handlerRunner does, and does the kubelet's
// bookkeeping around them from kuberuntime_container.go: the postStart
// failure event, the preStop hook's share of the grace period, and the
// grace period a kill starts from.
//
// Usage sketch (inside SyncPod's startContainer and killContainer):
//
//	hr := lifecycle.NewHandlerRunner(lifecycle.Options{Execer: criExecer, PodStatus: runtime, Recorder: rec})
//	if msg, err := hr.PostStart(ctx, id, pod, spec); err != nil {
//		// kill the container with reason lifecycle.ReasonFailedPostStartHook,
//		// record msg as the container's waiting message, return err
//	}
//	...
//	grace := lifecycle.TerminationGracePeriod(pod, spec, reason)
//	grace = hr.PreStop(ctx, id, pod, spec, grace) // what is left, at least 2 s
//	StopContainer(id, grace)
package lifecycle
