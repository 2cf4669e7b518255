package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
	"github.com/splitlet/splitlet/services/admission/preemption"
)

// tracer starts the Admit span, one per pod decided, inside the call's
// server span (a no-op without tracing).
var tracer = tracing.Tracer("github.com/splitlet/splitlet/services/admission")

// Admit implements AdmissionServiceHandler: decode the pod and the active
// pods (sent in full or by reference), run the admitter, encode its
// decision. Undecodable input is InvalidArgument naming the field (`pod`,
// `active_pods[3]`, `active[2].digest`); active pods referred to but not
// held here are FailedPrecondition with an UnknownActivePods detail; a
// rejection is a normal response, never an error.
func (s *Service) Admit(ctx context.Context, req *connect.Request[admissionv1.AdmitRequest]) (*connect.Response[admissionv1.AdmitResponse], error) {
	start := time.Now()
	pod, active, setHeld, err := s.decodeAdmitRequest(req.Msg)
	if err != nil {
		s.metrics.observeAdmit(resultInvalid, "", time.Since(start))
		return nil, toConnectError(err)
	}
	out, _ := s.decide(ctx, pod, active, start)
	out.ActiveSetHeld = setHeld
	return connect.NewResponse(out), nil
}

// decide admits pod beside active and encodes the decision, recording it
// in the metrics (with the time since start) and the debug log; it
// returns the lifecycle result too.
func (s *Service) decide(ctx context.Context, pod *v1.Pod, active []*v1.Pod, start time.Time) (*admissionv1.AdmitResponse, lifecycle.PodAdmitResult) {
	log := s.log.With(zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("podUID", string(pod.UID)))
	ctx, span := tracer.Start(logctx.With(ctx, log), "Admit", tracing.PodAttributes(pod.Namespace, pod.Name, string(pod.UID)))
	defer span.End()

	res := s.admitter.Admit(ctx, pod, active)
	out := &admissionv1.AdmitResponse{Admit: res.Admit, Reason: res.Reason, Message: res.Message}
	result := resultAdmitted
	switch {
	case len(res.Victims) > 0:
		result = resultPreempt
		out.VictimReason = preemption.VictimReason
		out.VictimMessage = preemption.VictimMessage
		for _, v := range res.Victims {
			out.Victims = append(out.Victims, podRef(v))
		}
	case !res.Admit:
		result = resultRejected
	}
	s.metrics.observeAdmit(result, res.Reason, time.Since(start))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("splitlet.admission.result", result), attribute.String("splitlet.admission.reason", res.Reason))
	}
	log.Debug("admission decided", zap.String("result", result), zap.String("reason", res.Reason),
		zap.String("message", res.Message), zap.Int("victims", len(res.Victims)), zap.Int("activePods", len(active)))
	return out, res
}

func (s *Service) decodeAdmitRequest(msg *admissionv1.AdmitRequest) (pod *v1.Pod, active []*v1.Pod, setHeld bool, err error) {
	s.pods.Reserve(1 + len(msg.GetActivePods()) + len(msg.GetActive()))
	// The active set first: references resolve before the new pod's
	// decoding can push anything out of the store.
	active, setHeld, err = s.decodeActive(msg.GetActivePods(), msg.GetActive(), msg.GetActiveSet(), msg.GetActiveChange(), "active")
	if err != nil {
		return nil, nil, false, err
	}
	if pod, err = s.decodePod(msg.GetPod()); err != nil {
		return nil, nil, false, podError("pod", err)
	}
	return pod, active, setHeld, nil
}

// errEmptyPod refuses empty bytes: they decode to a pod without a name,
// which no handler can say anything useful about.
var errEmptyPod = errors.New("empty")

// decodePod reads a core/v1 Pod in the Kubernetes protobuf encoding
// through the service's PodStore, which keeps it for later references.
func (s *Service) decodePod(b []byte) (*v1.Pod, error) {
	if len(b) == 0 {
		return nil, errEmptyPod
	}
	return s.pods.Decode(b)
}

// podError names the field that did not decode; the field name is built
// only on failure, since a request carries up to a node's worth of pods.
func podError(field string, err error) error {
	if errors.Is(err, errEmptyPod) {
		return fmt.Errorf("%s: empty; want a core/v1 Pod in Kubernetes protobuf encoding: %w", field, errdefs.ErrInvalidArgument)
	}
	return fmt.Errorf("%s: not a core/v1 Pod in Kubernetes protobuf encoding: %v: %w", field, err, errdefs.ErrInvalidArgument)
}

func podRef(p *v1.Pod) *admissionv1.PodRef {
	return &admissionv1.PodRef{Namespace: p.Namespace, Name: p.Name, Uid: string(p.UID)}
}
