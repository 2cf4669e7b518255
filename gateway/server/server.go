// Package server is the runtime-gateway's gRPC server: it serves the CRI
// RuntimeService and ImageService over one backend.Runtime, on a unix socket
// and optionally on TCP with mutual TLS, with the gateway's cross-cutting
// concerns applied in one interceptor chain.
//
// Every call, unary or stream, passes through, outermost first:
//
//	recover (a panic becomes Internal, the process lives on)
//	-> observe (Prometheus metrics and one zap line per call; puts a logger
//	   naming the method into the context, see server/logctx)
//	-> error conversion (the only place errors become gRPC status: errdefs
//	   sentinels via errgrpc.ToGRPC, status errors passed through untouched)
//	-> deadline (a default deadline for unary calls that have none; streams
//	   end when the server shuts down)
//	-> validation (required fields, InvalidArgument naming the field)
//	-> policy (privileged, host namespaces, host paths; PermissionDenied)
//	-> the backend.
//
// Unary calls run the chain as one interceptor (unaryChain), which spares
// grpc-go's per-call linking closures. A backend that can forward calls as
// bytes (backend.Forwarder, the cri backend) gets the calls no step reads
// that way, undecoded (passthrough.go).
//
// The HTTP/2 transport is tuned for latency on a local socket (fixed
// flow-control windows, long-lived stream workers; see transport.go), and the
// observe interceptors' per-method logger and metric collectors are built
// once (methods.go): both are measured by BenchmarkContainerd in ../bench.
//
// Besides CRI the server registers the gRPC health service (SERVING for "" and
// both CRI services; NOT_SERVING once shutdown starts) and, when the backend
// can be scripted (it implements gatewayv1.FakeControlServiceServer), the fake
// control service.
//
// Usage:
//
//	srv, err := server.New(server.Config{SocketPath: "/run/splitlet/gateway.sock"}, rt,
//		server.WithLogger(log))
//	if err != nil { ... }          // the socket exists once New returns
//	err = srv.Serve(ctx)          // until ctx is done, then a graceful shutdown
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitlet/splitlet/internal/opsmux"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/backend/passthrough"
	"github.com/splitlet/splitlet/gateway/policy"
	"github.com/splitlet/splitlet/gateway/streamproxy"
	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// Server serves CRI over a backend.Runtime. Create it with New, run it with
// Serve; Close stops it at once. The Runtime stays the caller's to close.
type Server struct {
	cfg     Config
	log     *zap.Logger
	policy  *policy.Policy
	metrics *metrics
	methods map[string]*method // per-RPC observe state; read-only after New
	health  *health.Server
	serving atomic.Bool

	// streamCtx ends every CRI stream (GetContainerEvents, Stream*) when the
	// server shuts down, so a graceful stop is not held up by watchers that
	// never hang up.
	streamCtx     context.Context
	cancelStreams context.CancelFunc

	grpcServers []*grpc.Server // one per listener; the TCP one speaks TLS
	listeners   []net.Listener
	httpServer  *http.Server
	httpLn      net.Listener
	tcpLn       net.Listener
	ownsSocket  bool // the socket file at cfg.SocketPath is ours to remove

	// streams fronts the runtime's streaming server when
	// cfg.StreamingAddr is set (streams.go).
	streams  *streamproxy.Proxy
	streamLn net.Listener

	stopOnce sync.Once
}

// Option customises a Server.
type Option func(*options)

type options struct {
	logger    *zap.Logger
	grpcOpts  []grpc.ServerOption
	decodeAll bool
}

// WithLogger sets the server's logger (default: no logging).
func WithLogger(l *zap.Logger) Option { return func(o *options) { o.logger = l } }

// WithGRPCOptions adds options to every gRPC server the gateway creates, after
// its own (benchmarks use it to tune buffers, tests to add interceptors).
func WithGRPCOptions(opts ...grpc.ServerOption) Option {
	return func(o *options) { o.grpcOpts = append(o.grpcOpts, opts...) }
}

// WithEveryCallDecoded turns forwarding as bytes off: every call to a
// backend.Forwarder is decoded and encoded again, as for any backend. It is
// there to measure what forwarding as bytes saves (BenchmarkContainerd).
func WithEveryCallDecoded() Option { return func(o *options) { o.decodeAll = true } }

// controller is how a backend offers the fake control service when it keeps it
// on a separate object rather than implementing it itself.
type controller interface {
	Control() gatewayv1.FakeControlServiceServer
}

// New builds the server and opens its listeners, so the socket exists (with
// its mode and group) when New returns. Nothing is served until Serve.
func New(cfg Config, rt backend.Runtime, opts ...Option) (_ *Server, retErr error) {
	if rt == nil {
		return nil, errors.New("server: a backend runtime is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{logger: zap.NewNop()}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{
		cfg:     cfg,
		log:     o.logger,
		policy:  policy.New(cfg.Policy),
		metrics: newMetrics(),
		health:  health.NewServer(),
	}
	s.streamCtx, s.cancelStreams = context.WithCancel(context.Background())
	defer func() {
		if retErr != nil {
			s.Close()
		}
	}()

	base := append(transportOptions(),
		grpc.MaxRecvMsgSize(maxMsgSize),
		grpc.MaxSendMsgSize(maxMsgSize),
		grpc.ChainUnaryInterceptor(s.unaryChain), // the six unary steps, see unaryChain
		grpc.ChainStreamInterceptor(s.recoverStream, s.observeStream, s.convertErrorsStream,
			s.streamLifetime),
	)
	// A backend that forwards calls as bytes gets them as bytes
	// (passthrough.go); the codec is the proto codec for everything else.
	fwd, forwards := rt.(backend.Forwarder)
	forwards = forwards && !o.decodeAll
	if forwards {
		base = append(base, grpc.ForceServerCodecV2(passthrough.Codec{}))
	}
	base = append(base, o.grpcOpts...)

	if cfg.SocketPath != "" {
		ln, err := listenUnix(cfg.SocketPath, cfg.SocketMode, cfg.SocketGroup)
		if err != nil {
			return nil, err
		}
		s.ownsSocket = true
		s.listeners = append(s.listeners, ln)
		s.grpcServers = append(s.grpcServers, grpc.NewServer(base...))
	}
	if cfg.TCPAddr != "" {
		tlsCfg, err := serverTLSConfig(cfg.TLS)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", cfg.TCPAddr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", cfg.TCPAddr, err)
		}
		s.tcpLn = ln
		s.listeners = append(s.listeners, ln)
		tcpOpts := append([]grpc.ServerOption{grpc.Creds(credentials.NewTLS(tlsCfg))}, base...)
		s.grpcServers = append(s.grpcServers, grpc.NewServer(tcpOpts...))
	}
	if cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("listen for metrics on %s: %w", cfg.MetricsAddr, err)
		}
		s.httpLn = ln
		s.httpServer = &http.Server{
			Handler:           s.MetricsHandler(),
			ReadHeaderTimeout: 10 * time.Second,
		}
	}

	ctl, _ := rt.(gatewayv1.FakeControlServiceServer)
	if c, ok := rt.(controller); ok && ctl == nil {
		ctl = c.Control()
	}
	if cfg.StreamingAddr != "" {
		p, err := s.newStreamProxy()
		if err != nil {
			return nil, err
		}
		s.streams = p
		rt = frontedRuntime{Runtime: rt, proxy: p}
	}
	for _, gs := range s.grpcServers {
		if forwards {
			gs.RegisterService(forwardingDesc(&runtimeapi.RuntimeService_ServiceDesc, fwd), rt)
			gs.RegisterService(forwardingDesc(&runtimeapi.ImageService_ServiceDesc, fwd), rt)
		} else {
			runtimeapi.RegisterRuntimeServiceServer(gs, rt)
			runtimeapi.RegisterImageServiceServer(gs, rt)
		}
		healthpb.RegisterHealthServer(gs, s.health)
		gatewayv1.RegisterPolicyServiceServer(gs, policyService{policy: s.policy})
		if ctl != nil {
			gatewayv1.RegisterFakeControlServiceServer(gs, ctl)
		}
	}
	s.indexMethods(s.grpcServers[0]) // every server serves the same services
	for _, name := range []string{"",
		runtimeapi.RuntimeService_ServiceDesc.ServiceName,
		runtimeapi.ImageService_ServiceDesc.ServiceName} {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	if ctl != nil {
		s.health.SetServingStatus(gatewayv1.FakeControlService_ServiceDesc.ServiceName,
			healthpb.HealthCheckResponse_SERVING)
	}
	s.serving.Store(true)
	return s, nil
}

// Serve serves every listener until ctx is done, then shuts down gracefully:
// health turns NOT_SERVING, CRI streams end, in-flight unary calls get up to
// ShutdownTimeout to finish before the servers stop hard, and the socket file
// is removed. It returns nil after a shutdown caused by ctx, or the error of a
// listener that failed.
func (s *Server) Serve(ctx context.Context) error {
	if !s.serving.Load() {
		return errors.New("server: Serve called after Close")
	}
	errCh := make(chan error, len(s.grpcServers)+1)
	for i, gs := range s.grpcServers {
		go func(gs *grpc.Server, ln net.Listener) {
			if err := gs.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				errCh <- fmt.Errorf("serve %s: %w", ln.Addr(), err)
			}
		}(gs, s.listeners[i])
	}
	if s.httpServer != nil {
		go func() {
			if err := s.httpServer.Serve(s.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errCh <- fmt.Errorf("serve metrics: %w", err)
			}
		}()
	}
	if s.streams != nil {
		go func() {
			if err := s.streams.Serve(); err != nil {
				errCh <- fmt.Errorf("serve streams: %w", err)
			}
		}()
	}
	s.log.Info("gateway serving", zap.Strings("addresses", s.addresses()))

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errCh:
		s.log.Error("listener failed, shutting down", zap.Error(serveErr))
	}
	s.stop(true)
	return serveErr
}

// Close stops the server at once, without waiting for in-flight calls, and
// removes the socket. It is safe to call more than once and after Serve.
func (s *Server) Close() error {
	s.stop(false)
	return nil
}

func (s *Server) stop(graceful bool) {
	s.stopOnce.Do(func() {
		s.serving.Store(false)
		s.health.Shutdown() // NOT_SERVING to every watcher before anything closes
		s.cancelStreams()

		var wg sync.WaitGroup
		for _, gs := range s.grpcServers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if graceful {
					stopBounded(gs, s.cfg.ShutdownTimeout, s.log)
				} else {
					gs.Stop()
				}
			}()
		}
		if s.httpServer != nil {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
			if err := s.httpServer.Shutdown(ctx); err != nil {
				s.httpServer.Close()
			}
			cancel()
		}
		if s.streams != nil {
			// Open streams ended with cancelStreams above.
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
			_ = s.streams.Shutdown(ctx)
			cancel()
		}
		wg.Wait()
		// Listeners never handed to Serve (Close before Serve, or New failing
		// half-way) are not closed by the servers; closing twice is harmless.
		for _, ln := range s.listeners {
			ln.Close()
		}
		if s.httpLn != nil {
			s.httpLn.Close()
		}
		if s.streamLn != nil {
			s.streamLn.Close()
		}
		// grpc closes the unix listener, which unlinks the socket; remove it
		// anyway in case a listener was never handed to a gRPC server.
		if s.ownsSocket {
			if err := os.Remove(s.cfg.SocketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.log.Warn("remove socket", zap.Error(err))
			}
		}
		s.log.Info("gateway stopped")
	})
}

// stopBounded is GracefulStop with a deadline: calls still running after
// timeout are cut off by Stop.
func stopBounded(gs *grpc.Server, timeout time.Duration, log *zap.Logger) {
	done := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn("graceful stop timed out, stopping hard", zap.Duration("timeout", timeout))
		gs.Stop()
		<-done
	}
}

// MetricsHandler serves /metrics and /healthz, and with Config.Profiling
// /debug/pprof/, as on MetricsAddr.
// /healthz answers 503 once the gateway is shutting down.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	opsmux.Add(mux, s.metrics.registry, s.serving.Load, s.cfg.Profiling)
	return mux
}

// TCPAddr is the TCP listener's address (useful with port 0), or nil.
func (s *Server) TCPAddr() net.Addr {
	if s.tcpLn == nil {
		return nil
	}
	return s.tcpLn.Addr()
}

// MetricsAddr is the metrics listener's address, or nil.
func (s *Server) MetricsAddr() net.Addr {
	if s.httpLn == nil {
		return nil
	}
	return s.httpLn.Addr()
}

// StreamingAddr is the streaming proxy's listener address, or nil.
func (s *Server) StreamingAddr() net.Addr {
	if s.streamLn == nil {
		return nil
	}
	return s.streamLn.Addr()
}

func (s *Server) addresses() []string {
	var out []string
	for _, ln := range s.listeners {
		out = append(out, ln.Addr().Network()+"://"+ln.Addr().String())
	}
	if s.httpLn != nil {
		out = append(out, "http://"+s.httpLn.Addr().String()+"/metrics")
	}
	if s.streamLn != nil {
		out = append(out, "http://"+s.streamLn.Addr().String()+" (streams)")
	}
	return out
}
