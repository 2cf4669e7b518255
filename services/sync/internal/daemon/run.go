// Package daemon wires splitlet-sync together: the CRI client to the
// gateway, the pod store, the sources, the pod manager, the runtime manager,
// the admission client (when --admission-endpoint is set, with its eviction
// watcher), the sync loop, the API server source with its status manager,
// event sink and node registration (when --kubeconfig is set) and the
// PodService, the kubelet's pod-resources API (when --pod-resources-socket
// is set) and its node API (when --node-api-addr is set):
// build makes them in that order, and run runs them until the context ends,
// then stops them in dependency order.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	_ "net/http/pprof" // registers the handlers on http.DefaultServeMux
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/splitlet/splitlet/services/sync/internal/config"
	"github.com/splitlet/splitlet/services/sync/internal/runtimestate"
	"github.com/splitlet/splitlet/services/sync/internal/statuskeep"
	"github.com/splitlet/splitlet/services/sync/internal/store"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// shutdownTimeout bounds the servers' graceful shutdown and the wait
// for the background loops.
const shutdownTimeout = 5 * time.Second

// Run runs splitlet-sync until ctx ends. The logger comes from ctx.
func Run(ctx context.Context, cfg config.Config) error {
	// What build starts with ctx (the prober's workers, the certificate
	// managers) ends when Run returns, also after a server failed.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d, err := build(ctx, cfg)
	if err != nil {
		return err
	}
	err = d.run(ctx)
	// Before the CRI connection closes: the prober's workers use it.
	cancel()
	return errors.Join(err, d.close())
}

// daemon is splitlet-sync, built: what run serves and runs, and what
// close releases after it.
type daemon struct {
	log *zap.Logger

	// What run starts, in the order it stops them. streams closes when
	// the stop begins, ending the PodService's streams (endStreams).
	streams    chan struct{}
	servers    []netServer
	background []loop
	network    networkState
	kubelet    syncLoop
	keeper     statusWriter

	// Released by close, in this order.
	store *store.Store
	conn  *grpc.ClientConn
}

// syncLoop is the sync loop (syncloop.Kubelet): it runs until ctx ends,
// then waits for its pod workers.
type syncLoop interface {
	Run(ctx context.Context) error
}

// statusWriter is the status keeper (statuskeep.Keeper): it writes the
// pods' statuses to the store until ctx ends, then what it still holds.
type statusWriter interface {
	Run(ctx context.Context)
}

// networkState is the runtime's network readiness (runtimestate.State).
type networkState interface {
	Update(ctx context.Context)
}

var (
	_ syncLoop     = (*syncloop.Kubelet)(nil)
	_ statusWriter = (*statuskeep.Keeper)(nil)
	_ networkState = (*runtimestate.State)(nil)
)

// run serves and runs everything build made until ctx ends or a server or
// the sync loop fails, then stops it in dependency order and returns the
// first error:
//  1. the servers and the background loops, the sources among them, so
//     that nothing new reaches the sync loop;
//  2. the sync loop, which waits for its pod workers;
//  3. the status keeper, which writes to the store: after the sync loop,
//     so that the loop's last statuses are kept, and before the store
//     closes (close, after run).
func (d *daemon) run(ctx context.Context) error {
	// Known before the first pod syncs, so that pods on the pod network
	// do not wait a retry period for the first answer.
	firstCtx, firstDone := context.WithTimeout(ctx, 2*time.Second)
	d.network.Update(firstCtx)
	firstDone()

	// gctx ends with ctx or with the first error; the background loops
	// end with it.
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range d.servers {
		g.Go(func() error { return s.serve(d.log) })
	}
	bg := startBackground(gctx, d.background)
	stopLoop := goStage(ctx, g, d.kubelet.Run)
	stopKeeper := goStage(ctx, g, func(ctx context.Context) error {
		d.keeper.Run(ctx)
		return nil
	})

	<-gctx.Done()
	shutdownCtx, done := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer done()
	close(d.streams)
	for _, s := range d.servers {
		s.shutdown(shutdownCtx)
	}
	bg.wait(shutdownCtx, d.log)
	stopLoop()
	stopKeeper()
	return g.Wait()
}

// goStage runs f under g with a context of its own, which carries ctx's
// values but does not end with it: stop cancels that context and waits for
// f to return, so that run stops each stage after the one feeding it.
func goStage(ctx context.Context, g *errgroup.Group, f func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	g.Go(func() error {
		defer close(done)
		return f(ctx)
	})
	return func() {
		cancel()
		<-done
	}
}

// close releases what build opened, after run or a failed build: the
// listeners (which a server's shutdown has closed already), the store and
// the CRI connection. It returns the store's error.
func (d *daemon) close() error {
	for _, s := range d.servers {
		s.close()
	}
	var err error
	if d.store != nil {
		if cerr := d.store.Close(); cerr != nil {
			err = fmt.Errorf("close the pod store: %w", cerr)
		}
	}
	if d.conn != nil {
		_ = d.conn.Close()
	}
	return err
}

// netServer is one of sync's servers, bound to its listener by build.
type netServer interface {
	// serve serves until the server is shut down (nil) or fails.
	serve(log *zap.Logger) error
	// shutdown stops taking calls and waits for those under way until
	// ctx ends.
	shutdown(ctx context.Context)
	// close closes the listener, for a build that failed before serve.
	close()
}

var (
	_ netServer = httpServer{}
	_ netServer = grpcServer{}
)

// httpServer is one of sync's HTTP servers, bound to its listener.
type httpServer struct {
	name string // in the log and in its error
	srv  *http.Server
	ln   net.Listener
	tls  bool // served over TLS with srv.TLSConfig
}

func (s httpServer) serve(log *zap.Logger) error {
	log.Info("serving", zap.String("server", s.name), zap.String("addr", s.ln.Addr().String()))
	var err error
	if s.tls {
		err = s.srv.ServeTLS(s.ln, "", "")
	} else {
		err = s.srv.Serve(s.ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("%s: %w", s.name, err)
}

func (s httpServer) shutdown(ctx context.Context) { _ = s.srv.Shutdown(ctx) }

func (s httpServer) close() { _ = s.ln.Close() }

// grpcServer is one of sync's gRPC servers (the pod-resources API), bound
// to its listener.
type grpcServer struct {
	name string // in the log and in its error
	addr string // in the log: a unix socket's path, which ln.Addr is not while it is bound under a temporary name
	srv  *grpc.Server
	ln   net.Listener
}

func (s grpcServer) serve(log *zap.Logger) error {
	log.Info("serving", zap.String("server", s.name), zap.String("addr", s.addr))
	if err := s.srv.Serve(s.ln); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// shutdown lets the calls under way finish, and cuts them when ctx ends.
func (s grpcServer) shutdown(ctx context.Context) {
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.srv.Stop()
		<-stopped
	}
}

func (s grpcServer) close() { _ = s.ln.Close() }

// loop is a background loop of sync: it runs until its context ends.
type loop struct {
	name string
	run  func(ctx context.Context)
}

// background is the background loops, running. run waits for them before
// it stops the sync loop, so that only a loop stuck past the shutdown
// timeout outlives run. They are not in run's errgroup: they return no
// error, and their wait is bounded, which errgroup.Wait's cannot be.
type background struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]bool
}

// startBackground starts loops, which end with ctx.
func startBackground(ctx context.Context, loops []loop) *background {
	b := &background{running: map[string]bool{}}
	for _, l := range loops {
		b.running[l.name] = true
	}
	for _, l := range loops {
		b.wg.Go(func() {
			l.run(ctx)
			b.mu.Lock()
			delete(b.running, l.name)
			b.mu.Unlock()
		})
	}
	return b
}

// wait waits for the loops, which end with their context, or until ctx
// (the shutdown timeout) ends: one stuck loop must not keep sync from
// stopping, and is named in the log.
func (b *background) wait(ctx context.Context, log *zap.Logger) {
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		b.mu.Lock()
		stuck := slices.Sorted(maps.Keys(b.running))
		b.mu.Unlock()
		log.Warn("background loops still running at the end of the shutdown timeout", zap.Strings("loops", stuck))
	}
}
