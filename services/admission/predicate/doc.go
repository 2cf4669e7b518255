// Package predicate is the kubelet's predicate admission: the checks a pod
// must pass against this node before it may run, even when a scheduler has
// already placed it (a static pod, or a node that changed since scheduling).
//
// The checks and their order are those of predicateAdmitHandler.Admit and
// generalFilter in pkg/kubelet/lifecycle/predicate.go, which call the
// scheduler's NodeResourcesFit, NodeAffinity, NodeName and NodePorts filters
// (pkg/scheduler AdmissionCheck) and then check NoExecute taints:
//
//  1. the node object (InvalidNodeInfo when it cannot be had);
//  2. the pod's kubernetes.io/os label and spec.os against the node's OS;
//  3. supplementalGroupsPolicy Strict against the node's features;
//  4. resources: pods, cpu, memory, ephemeral-storage, then hugepages and
//     extended resources (OutOf<resource>);
//  5. node selector and required node affinity (NodeAffinity);
//  6. spec.nodeName (NodeName);
//  7. host ports (NodePorts);
//  8. NoExecute taints, except for static pods (TaintToleration).
//
// When a check fails, an optional lifecycle.AdmissionFailureHandler (the
// critical-pod preemption) may turn the failure into a list of victims.
//
// What an active pod holds (its requests and host ports) is summarised in an
// ActivePodInfo. A caller that sees the same active pod objects on every
// admission, as splitlet-admission does with its cache of decoded pods,
// supplies summaries computed once through Options.ActivePodInfos; the
// decisions are the same either way.
package predicate
