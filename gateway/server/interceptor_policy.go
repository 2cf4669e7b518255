package server

import (
	"context"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
)

// checkPolicy is the policy step of the unary chain (unaryChain): it asks
// the policy about pod and container creation and checkpoints; a refusal
// never reaches the runtime. Refusals are logged at info with the rule,
// since an operator will want to know which workload was turned away.
func (s *Server) checkPolicy(ctx context.Context, req any) error {
	if err := s.policy.Check(req); err != nil {
		logctx.From(ctx).Info("request refused by policy", zap.Error(err))
		return err
	}
	return nil
}
