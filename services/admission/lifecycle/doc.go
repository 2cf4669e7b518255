// Package lifecycle holds the types every admission handler shares: the
// PodAdmitHandler interface, its attributes and result, the failure reasons a
// predicate reports, the critical-pod rules, and Chain, which runs handlers in
// order and stops at the first rejection.
//
// The names follow the kubelet's pkg/kubelet/lifecycle and pkg/kubelet/types
// so that a kubelet reader finds the same vocabulary:
//
//	chain := lifecycle.Chain{evictionHandler, predicateHandler}
//	res := chain.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: active})
//	if !res.Admit && len(res.Victims) > 0 {
//		// critical-pod preemption: stop the victims, then run admission again
//	}
package lifecycle
