package server

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/splitlet/splitlet/internal/logctx"
)

// criMethodPrefix starts the full method name of every CRI RPC.
const criMethodPrefix = "/runtime.v1."

// operation is the operation_type label and the logged method: the gRPC
// method name without its service ("/runtime.v1.RuntimeService/RunPodSandbox"
// -> "RunPodSandbox"), so it reads like the CRI spec.
func operation(fullMethod string) string {
	if i := strings.LastIndexByte(fullMethod, '/'); i >= 0 {
		return fullMethod[i+1:]
	}
	return fullMethod
}

// observeStream records metrics and one log line per call and gives the
// layers below a logger that names the method. It sits outside error
// conversion so it sees the final gRPC code. (unaryChain does the same for
// unary calls.)
func (s *Server) observeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	m := s.method(info.FullMethod)
	start := time.Now()
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: logctx.With(ss.Context(), m.log)})
	s.record(m, start, err)
	return err
}

// record logs successes at debug (a busy node makes thousands of CRI calls a
// minute) and failures at warn, with method, code and duration. Only CRI calls
// count as runtime operations in the metrics: health probes and fake control
// calls would blur them. The fields are built only when the level is enabled.
func (s *Server) record(m *method, start time.Time, err error) {
	d := time.Since(start)
	code := status.Code(err)
	if m.cri {
		s.metrics.observe(m, code, d)
	}
	level := zapcore.DebugLevel
	if code != codes.OK {
		level = zapcore.WarnLevel
	}
	if ce := m.log.Check(level, "CRI call"); ce != nil {
		fields := []zap.Field{zap.Stringer("code", code), zap.Duration("duration", d)}
		if err != nil {
			fields = append(fields, zap.Error(err))
		}
		ce.Write(fields...)
	}
}

// ctxStream is a grpc.ServerStream with a replaced context.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *ctxStream) Context() context.Context { return c.ctx }
