package server

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/predicate"
)

// AdmitPods implements AdmissionServiceHandler: it admits the request's
// pods in order, each beside the active pods plus the pods admitted before
// it in this call, which is what one Admit per pod in that order answers
// (the kubelet's HandlePodAdditions admits sequentially, and every admitted
// pod joins the active pods its next canAdmitPod sees). A rejected pod does
// not join. It stops after the first answer naming victims: the caller must
// stop them before anything after that pod can be judged.
//
// Errors are Admit's: InvalidArgument naming the field (`pods[2]`,
// `active[5].uid`), FailedPrecondition for references not held here. No
// pod is judged when the request is refused.
func (s *Service) AdmitPods(ctx context.Context, req *connect.Request[admissionv1.AdmitPodsRequest]) (*connect.Response[admissionv1.AdmitPodsResponse], error) {
	start := time.Now()
	pods, active, setHeld, err := s.decodeAdmitPodsRequest(req.Msg)
	if err != nil {
		s.metrics.observeAdmit(resultInvalid, "", time.Since(start))
		return nil, toConnectError(err)
	}
	out := &admissionv1.AdmitPodsResponse{Results: make([]*admissionv1.AdmitResponse, 0, len(pods)), ActiveSetHeld: setHeld}
	// Each pod's duration is its own decision; the first carries the
	// decoding too, as one Admit would.
	decided := start
	// active only grows, in place (its capacity holds every pod), so
	// each admission adds up only the pods admitted since the last.
	ctx = predicate.WithActiveTotals(ctx, &predicate.ActiveTotals{})
	for _, pod := range pods {
		if err := ctx.Err(); err != nil {
			return nil, toConnectError(err)
		}
		resp, res := s.decide(ctx, pod, active, decided)
		decided = time.Now()
		out.Results = append(out.Results, resp)
		if len(res.Victims) > 0 {
			break
		}
		if res.Admit {
			active = append(active, pod)
		}
	}
	return connect.NewResponse(out), nil
}

func (s *Service) decodeAdmitPodsRequest(msg *admissionv1.AdmitPodsRequest) (pods, active []*v1.Pod, setHeld bool, err error) {
	if len(msg.GetPods()) == 0 {
		return nil, nil, false, fmt.Errorf("pods: empty; want at least one pod to admit: %w", errdefs.ErrInvalidArgument)
	}
	s.pods.Reserve(len(msg.GetPods()) + len(msg.GetActive()))
	active, setHeld, err = s.decodeActive(nil, msg.GetActive(), msg.GetActiveSet(), msg.GetActiveChange(), "active")
	if err != nil {
		return nil, nil, false, err
	}
	// The active slice grows by the admitted pods; room for all of them
	// keeps the appends from copying a node's worth of pointers.
	active = append(make([]*v1.Pod, 0, len(active)+len(msg.GetPods())), active...)
	pods = make([]*v1.Pod, len(msg.GetPods()))
	for i, b := range msg.GetPods() {
		if pods[i], err = s.decodePod(b); err != nil {
			return nil, nil, false, podError(fmt.Sprintf("pods[%d]", i), err)
		}
	}
	return pods, active, setHeld, nil
}
