package admission

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// AdmitPods implements syncloop.BatchAdmitter with one AdmitPods call for
// at most Options.MaxBatch of pods (the caller asks again for the rest),
// the active pods by digest or reference as in Admit. The server answers up to and
// including the first pod with victims. Failures wrap
// syncloop.ErrAdmissionUnavailable, as Admit's.
func (c *Client) AdmitPods(ctx context.Context, pods []*v1.Pod, active []*v1.Pod) ([]syncloop.AdmitResult, error) {
	pods = pods[:min(len(pods), c.opts.MaxBatch)]
	var again resend
	for {
		req, err := c.active.prepare(pods, active, again)
		if err != nil {
			return nil, err
		}
		resp, err := c.admitPods(ctx, &admissionv1.AdmitPodsRequest{Pods: req.pods, Active: req.active, ActiveSet: req.set[:], ActiveChange: req.change})
		if err != nil {
			var ok bool
			if again, ok = retry(err, again); ok {
				continue
			}
			return nil, c.unavailable(err)
		}
		if len(resp.GetResults()) == 0 || len(resp.GetResults()) > len(pods) {
			return nil, c.unavailable(fmt.Errorf("%d answers for %d pods", len(resp.GetResults()), len(pods)))
		}
		c.active.acknowledge(req, resp.GetActiveSetHeld())
		out := make([]syncloop.AdmitResult, len(resp.GetResults()))
		for i, r := range resp.GetResults() {
			out[i] = admitResult(r)
		}
		return out, nil
	}
}

func (c *Client) admitPods(ctx context.Context, req *admissionv1.AdmitPodsRequest) (*admissionv1.AdmitPodsResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.svc.AdmitPods(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}
