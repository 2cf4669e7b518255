package lifecycle

import (
	"context"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
)

// Chain runs handlers in order and returns the first rejection, or an
// admitting result when every handler admits. This is the loop of the
// kubelet's canAdmitPod over its admitHandlers.
type Chain []PodAdmitHandler

var _ PodAdmitHandler = Chain(nil)

// Admit implements PodAdmitHandler.
func (c Chain) Admit(ctx context.Context, attrs *PodAdmitAttributes) PodAdmitResult {
	for _, h := range c {
		res := h.Admit(ctx, attrs)
		if !res.Admit {
			logctx.From(ctx).Info("pod admission rejected",
				zap.String("pod", podKey(attrs)),
				zap.String("reason", res.Reason),
				zap.String("message", res.Message),
				zap.Int("victims", len(res.Victims)))
			return res
		}
	}
	return PodAdmitResult{Admit: true}
}

func podKey(attrs *PodAdmitAttributes) string {
	if attrs == nil || attrs.Pod == nil {
		return ""
	}
	return attrs.Pod.Namespace + "/" + attrs.Pod.Name
}
