package syncloop

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// AdmitResult is an admission decision; Reason and Message explain a
// rejection and become the rejected pod's status.
type AdmitResult struct {
	Admit   bool
	Reason  string
	Message string
}

// Admitter decides whether a new pod may run on the node given the pods
// already active, as the kubelet's admit handlers do in HandlePodAdditions.
// An error means no decision could be made; the pod is then not started and
// the decision is retried on the pod's next update.
//
// Admission integration with the admission service is pending: sync
// currently runs with AlwaysAdmit.
type Admitter interface {
	Admit(ctx context.Context, pod *v1.Pod, active []*v1.Pod) (AdmitResult, error)
}

// AlwaysAdmit admits every pod.
type AlwaysAdmit struct{}

var _ Admitter = AlwaysAdmit{}

// Admit admits pod.
func (AlwaysAdmit) Admit(context.Context, *v1.Pod, []*v1.Pod) (AdmitResult, error) {
	return AdmitResult{Admit: true}, nil
}
