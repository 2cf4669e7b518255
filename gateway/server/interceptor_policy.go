package server

import (
	"context"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/splitlet/splitlet/gateway/server/logctx"
)

// policyUnary asks the policy about pod and container creation; a refusal
// never reaches the runtime. Refusals are logged at info with the rule, since
// an operator will want to know which workload was turned away.
func (s *Server) policyUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.policy.Check(req); err != nil {
		logctx.From(ctx).Info("request refused by policy", zap.Error(err))
		return nil, err
	}
	return handler(ctx, req)
}
