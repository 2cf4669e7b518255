package server

import (
	"github.com/containerd/errdefs/pkg/errgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// toStatus is the gateway's one conversion from Go errors to gRPC status:
// errdefs sentinels (and context errors) get their code with the error's
// message; a status error, such as a real runtime's reply forwarded by the cri
// backend, passes through untouched, code and message; anything else is
// Unknown with its message, as grpc-go would have made it, so metrics and logs
// see the code the client will see.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	out := errgrpc.ToGRPC(err)
	if _, ok := status.FromError(out); !ok {
		return status.Error(codes.Unknown, err.Error())
	}
	return out
}

func (s *Server) convertErrorsStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return toStatus(handler(srv, ss))
}
