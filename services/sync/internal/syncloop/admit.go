package syncloop

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AdmitResult is an admission decision; Reason and Message explain a
// rejection and become the rejected pod's status.
//
// Victims, when set, means the pod fits only once they are gone (the
// kubelet's critical-pod preemption): sync kills each victim with
// VictimReason and VictimMessage as its status, waits for them to stop and
// asks again without them. Admit is then not final.
type AdmitResult struct {
	Admit   bool
	Reason  string
	Message string

	Victims       []PodRef
	VictimReason  string
	VictimMessage string
}

// PodRef names a pod.
type PodRef struct {
	Namespace string
	Name      string
	UID       types.UID
}

// ErrAdmissionUnavailable is what an Admitter wraps when no decision could be
// made because the admission service cannot be reached or did not answer in
// time. The sync loop then applies its FailurePolicy.
var ErrAdmissionUnavailable = errors.New("admission unavailable")

// Admitter decides whether a new pod may run on the node given the pods
// already active, as the kubelet's admit handlers do in HandlePodAdditions.
// active never contains pod.
//
// Error contract: an error means no decision was made; the sync loop treats
// every error as ErrAdmissionUnavailable (fail-closed by default: the pod
// waits, and admission is retried with back-off). A rejection is a result,
// never an error.
type Admitter interface {
	Admit(ctx context.Context, pod *v1.Pod, active []*v1.Pod) (AdmitResult, error)
}

// BatchAdmitter is an Admitter that can also decide on several new pods in
// one call, which HandlePodAdditions prefers when many pods arrive at once.
//
// AdmitPods decides on pods in order, each against active plus the pods
// this call admitted before it: the answers must be exactly those of
// calling Admit once per pod in that order, adding each admitted pod to
// active (the kubelet's HandlePodAdditions). It may answer only a prefix of
// pods, at least one (e.g. to bound one call); it must stop after the first
// answer naming victims, since nothing after that pod can be judged before
// they are gone. The caller asks again for the rest. No pod of pods is in
// active.
//
// Error contract: Admit's. An error means no pod was decided.
type BatchAdmitter interface {
	Admitter
	AdmitPods(ctx context.Context, pods []*v1.Pod, active []*v1.Pod) ([]AdmitResult, error)
}

// AlwaysAdmit admits every pod. It is the admitter when sync runs without
// splitlet-admission (--admission-endpoint empty).
type AlwaysAdmit struct{}

var _ BatchAdmitter = AlwaysAdmit{}

// Admit admits pod.
func (AlwaysAdmit) Admit(context.Context, *v1.Pod, []*v1.Pod) (AdmitResult, error) {
	return AdmitResult{Admit: true}, nil
}

// AdmitPods admits every pod.
func (AlwaysAdmit) AdmitPods(_ context.Context, pods []*v1.Pod, _ []*v1.Pod) ([]AdmitResult, error) {
	out := make([]AdmitResult, len(pods))
	for i := range out {
		out[i].Admit = true
	}
	return out, nil
}

// FailurePolicy says what happens to a new pod when the admitter fails.
type FailurePolicy string

const (
	// FailurePolicyFail keeps the pod pending, with status reason
	// AdmissionUnavailable and a PodScheduled=False condition of the same
	// reason, and retries admission with back-off (the default: a node
	// agent must not overcommit the node because its admission is down).
	FailurePolicyFail FailurePolicy = "Fail"
	// FailurePolicyIgnore admits the pod.
	FailurePolicyIgnore FailurePolicy = "Ignore"
)

// ParseFailurePolicy reads "Fail" or "Ignore".
func ParseFailurePolicy(s string) (FailurePolicy, error) {
	switch p := FailurePolicy(s); p {
	case FailurePolicyFail, FailurePolicyIgnore:
		return p, nil
	}
	return "", fmt.Errorf("admission failure policy %q: want %s or %s", s, FailurePolicyFail, FailurePolicyIgnore)
}

// Status reasons and messages sync sets around admission.
const (
	// ReasonAdmissionUnavailable is the status reason (and the
	// PodScheduled=False condition reason) of a pod waiting because
	// admission could not be asked. The kubelet has no such state: its
	// admission is in-process.
	ReasonAdmissionUnavailable = "AdmissionUnavailable"
	// messageAdmissionUnavailable prefixes the admitter's error in the
	// pod's status message.
	messageAdmissionUnavailable = "Waiting for admission, which could not be reached; the pod starts once it is admitted: "
	// ReasonEvicted is the kubelet eviction manager's status reason.
	ReasonEvicted = "Evicted"
	// messagePreemptedCondition is the DisruptionTarget message of a
	// preempted pod, as the kubelet's CriticalPodAdmissionHandler.
	messagePreemptedCondition = "Pod was preempted by Kubelet to accommodate a critical pod."
)

// Evictor kills a running pod on behalf of the node's eviction manager: the
// pod ends with phase Failed, the given reason ("Evicted") and message, and
// a DisruptionTarget condition (reason TerminationByKubelet), its containers
// stopped with gracePeriodOverride when set, else the pod's own grace
// period. It matches what the kubelet's eviction manager's evictPod asks of
// killPodFunc. It returns without waiting for the pod to stop. A pod sync
// does not run (unknown, not admitted, or already terminating) is an error
// wrapping errdefs.ErrNotFound.
type Evictor interface {
	EvictPod(ctx context.Context, ref PodRef, reason, message string, gracePeriodOverride *int64) error
}

var _ Evictor = (*Kubelet)(nil)
