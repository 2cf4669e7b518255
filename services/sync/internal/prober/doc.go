// Package prober is sync's probe manager: the kubelet's pkg/kubelet/prober
// and pkg/probe rebuilt for splitlet. It runs the liveness, readiness and
// startup probes of every container (and sidecar) of the pods it is given,
// one goroutine per (container, probe type) as the kubelet does, and keeps
// the latest result per container instance in three results managers.
//
// Probe handlers (package probe, one attempt each): exec (through
// probe.Execer, which kuberuntime.Manager implements over CRI ExecSync on
// the runtime-gateway), httpGet, tcpSocket and grpc (the grpc.health.v1
// protocol). The network probes target the pod IP from the
// pod's generated status (for a host-network pod that is the node's IP,
// which the status generator puts there), unless the probe names a host.
//
// How the results are used, as in the kubelet:
//   - liveness and startup results feed computePodActions through the
//     kuberuntime.ProbeResults interface the Manager implements: a failure
//     kills and restarts the container per the restart policy;
//   - readiness and startup results feed the status generator through
//     UpdatePodStatus (status.Inputs{Probes: m}), which sets the container
//     statuses' ready and started fields from which ContainersReady and
//     Ready follow, and runs a readiness probe that has no result yet at
//     once;
//   - every change is also sent on the results manager's Updates channel so
//     the sync loop can sync the pod at once (liveness and startup failures)
//     or regenerate its status (readiness).
//
// Usage sketch:
//
//	pm := prober.NewManager(ctx, prober.Options{
//		Execer:   runtimeManager,     // kuberuntime.Manager: ExecSync through the gateway
//		Status:   podManager,         // GetPodStatus(uid) (v1.PodStatus, bool)
//		Recorder: eventRecorder,      // EventfContainer(pod, name, type, reason, fmt, args...)
//	})
//	pm.AddPod(pod)                        // on admission
//	... computePodActions(ctx, pod, podStatus, pm, restartAllContainers)
//	// All three Updates channels must be drained: liveness and startup
//	// failures call for a sync of u.PodUID, readiness changes for a new
//	// status.
//	for u := range pm.LivenessResults().Updates() { ... }
//	pm.RemovePod(pod)                     // when the pod is terminated
package prober
