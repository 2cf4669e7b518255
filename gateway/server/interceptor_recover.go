package server

import (
	"fmt"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// recoverStream turns a panic in anything below it into an Internal error for
// that one call, so one bad request cannot take the node's runtime access
// down. (unaryChain does the same for unary calls.)
func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.panicError(info.FullMethod, r)
		}
	}()
	return handler(srv, ss)
}

func (s *Server) panicError(fullMethod string, r any) error {
	s.log.Error("panic in RPC handler", zap.String("method", operation(fullMethod)),
		zap.Any("panic", r), zap.Stack("stack"))
	// The panic happened outside the error-conversion interceptor, so convert
	// here with the same function.
	return toStatus(fmt.Errorf("%s: panic: %v: %w", operation(fullMethod), r, errdefs.ErrInternal))
}
