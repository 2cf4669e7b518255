package fake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"k8s.io/cri-streaming/pkg/streaming"
)

// DefaultStreamingAddr is where the streaming server listens when
// Options.StreamingAddr is empty: loopback, on a port the kernel picks.
const DefaultStreamingAddr = "127.0.0.1:0"

// streamServer is the runtime's CRI streaming server: the kubelet's own
// (k8s.io/cri-streaming), the one containerd serves too, driven by the
// scripted "processes" in streams. Exec, Attach and PortForward return its
// one-time URLs; clients (the kubelet's node API, kubectl through the API
// server, client-go) then stream to it over SPDY or WebSocket.
//
// It starts on the first call that needs it, so the runtimes of tests and
// benchmarks that never stream open no port. Close stops it and ends every
// session still streaming: http.Server.Close does not close hijacked
// connections, which every session is, so the server tracks them itself.
type streamServer struct {
	addr    string
	runtime streaming.Runtime
	logger  *zap.Logger

	mu     sync.Mutex
	server streaming.Server // nil until started
	http   *http.Server
	served chan struct{}      // closed when Serve returns
	cancel context.CancelFunc // ends the sessions' contexts
	conns  map[net.Conn]struct{}
	closed bool
}

func newStreamServer(addr string, rt streaming.Runtime, logger *zap.Logger) *streamServer {
	if addr == "" {
		addr = DefaultStreamingAddr
	}
	return &streamServer{addr: addr, runtime: rt, logger: logger, conns: make(map[net.Conn]struct{})}
}

// get returns the running server, starting it if needed. A failed listen is
// returned to the caller and tried again on the next call.
func (s *streamServer) get() (streaming.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("streaming server: %w: %w", errClosed, errdefs.ErrUnavailable)
	}
	if s.server != nil {
		return s.server, nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("streaming server: %w: %w", err, errdefs.ErrUnavailable)
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = ln.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr, Path: "/"}
	server, err := streaming.NewServer(cfg, s.runtime)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("streaming server: %w: %w", err, errdefs.ErrInternal)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.server, s.cancel, s.served = server, cancel, make(chan struct{})
	s.http = &http.Server{
		Handler:           server,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          zap.NewStdLog(s.logger),
	}
	go func() {
		defer close(s.served)
		err := s.http.Serve(trackingListener{ln, s})
		if !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.logger.Error("streaming server stopped", zap.Error(err))
		}
	}()
	s.logger.Debug("streaming server started", zap.String("url", cfg.BaseURL.String()))
	return server, nil
}

// close stops the listener, ends every session and waits for Serve to
// return. Later calls of get fail.
func (s *streamServer) close() {
	s.mu.Lock()
	s.closed = true // from now on Accept refuses, so conns is complete
	started := s.server != nil
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if !started {
		return
	}
	s.cancel()
	if err := s.http.Close(); err != nil {
		s.logger.Debug("closing the streaming server", zap.Error(err))
	}
	for _, c := range conns {
		c.Close() // the hijacked ones: sessions' reads and writes fail
	}
	<-s.served
}

// trackingListener remembers the connections it accepts until they close.
type trackingListener struct {
	net.Listener
	s *streamServer
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, s: l.s}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	l.s.conns[tc] = struct{}{}
	return tc, nil
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	s    *streamServer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}
