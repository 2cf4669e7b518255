// Package fake is an in-memory CRI runtime: the gateway's `fake` backend.
//
// It keeps pod sandboxes, containers and images in memory and follows the
// state rules of containerd's CRI plugin (internal/cri/server) closely enough
// that the kubelet-like sync service, crictl and scenario tests cannot tell the
// difference for the RPCs it implements: 64-hex IDs, name reservation, READY /
// NOTREADY sandboxes, CREATED -> RUNNING -> EXITED containers, exit codes and
// reasons, ID-prefix lookups, list filters, container events, stats and CRI
// log files. It serves tests, benchmarks at thousands of pods and demos on a
// machine without containerd.
//
// Containers do not run anything. What a container "does" is scripted per
// container (see behavior.go): run for a while and exit with a code, crash,
// be OOM-killed, print lines to its log, fail exec probes, ignore SIGTERM or
// fail to start. The script travels with the pod, in annotations or an
// environment variable, so a Pod manifest alone can script it.
//
// Exec, Attach and PortForward are served by the kubelet's own CRI
// streaming server (k8s.io/cri-streaming), started on the first such call on
// Options.StreamingAddr (loopback by default) and stopped by Close, so
// kubectl exec -it, attach and port-forward can be tested without root. What
// runs behind its URLs is scripted too: an interactive line shell for `sh`
// with stdin, the ExecSync commands otherwise, `cat` for attach and an echo
// server on every forwarded port (shell.go, attach.go, port_forward.go).
//
// Faults (latency and error rates per CRI method, failing pulls) are set at
// run time through the FakeControlService, which *Runtime implements too.
//
// Usage:
//
//	rt := fake.New(fake.Options{
//		Logger: logger,
//		Images: []string{"registry.k8s.io/pause:3.10", "busybox"},
//	})
//	defer rt.Close()
//	runtimeapi.RegisterRuntimeServiceServer(grpcServer, rt)
//	runtimeapi.RegisterImageServiceServer(grpcServer, rt)
//	gatewayv1.RegisterFakeControlServiceServer(grpcServer, rt.Control())
//
// Errors follow the backend error contract: errdefs sentinels wrapped with
// %w, except injected faults, which are gRPC status errors.
package fake

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"

	"github.com/splitlet/splitlet/gateway/backend"
	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// Defaults reported by Version when Options leaves them empty.
const (
	DefaultRuntimeName    = "splitlet-fake"
	DefaultRuntimeVersion = "0.1.0"
	// criAPIVersion is the CRI API version the fake speaks.
	criAPIVersion = "v1"
)

// Options configures a Runtime. The zero value is usable.
type Options struct {
	// Clock gives the time stamped on sandboxes, containers, events and stats
	// (default time.Now). Timers for scripted exits and stop grace periods
	// use real time regardless.
	Clock func() time.Time
	// Logger logs state changes (default zap.NewNop()).
	Logger *zap.Logger
	// LoggerFromContext, when set, is asked first for a request-scoped logger
	// (the gateway server puts one with the method in the context).
	LoggerFromContext func(context.Context) *zap.Logger
	// RuntimeName and RuntimeVersion are reported by Version.
	RuntimeName    string
	RuntimeVersion string
	// Images are present at start, as if pulled (default: none). Bad
	// references make New panic; use Preload to get an error instead.
	Images []string
	// Seed seeds the random source used by fault error rates, so fault tests
	// are deterministic (default 1).
	Seed uint64
	// TimeoutUnit is how long one "second" of a CRI timeout lasts
	// (StopContainer's grace period). Default time.Second; tests shrink it so
	// that grace periods are honoured without slow tests.
	TimeoutUnit time.Duration
	// EventBuffer is the number of container events buffered per
	// GetContainerEvents subscriber before it is dropped (default 1024).
	EventBuffer int
	// StreamingAddr is the host:port the streaming server for Exec, Attach
	// and PortForward listens on (default DefaultStreamingAddr, a free
	// loopback port). It starts on the first of those calls. Its URLs name
	// the address it listens on, so give a routable one, not a wildcard,
	// for clients on other hosts.
	StreamingAddr string
	// SystemdCgroups has RuntimeConfig report the systemd cgroup driver, as
	// containerd with SystemdCgroup does (default: cgroupfs). The fake
	// makes no cgroups either way.
	SystemdCgroups bool
}

// Runtime is the in-memory CRI runtime. It implements backend.Runtime and
// the FakeControlService. All methods are safe for concurrent use.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer
	gatewayv1.UnimplementedFakeControlServiceServer

	clock       func() time.Time
	logger      *zap.Logger
	logFromCtx  func(context.Context) *zap.Logger
	name        string
	version     string
	timeoutUnit time.Duration
	cgroups     runtimeapi.CgroupDriver

	// mu guards the store: sandboxes, containers, images and their indexes.
	// Events are published while mu is held so subscribers see them in the
	// order the state changed.
	mu sync.RWMutex
	st *store

	events    *broker
	faults    *faults
	streaming *streamServer

	closeOnce sync.Once
}

var (
	_ backend.Runtime                    = (*Runtime)(nil)
	_ runtimeapi.RuntimeServiceServer    = (*Runtime)(nil)
	_ runtimeapi.ImageServiceServer      = (*Runtime)(nil)
	_ gatewayv1.FakeControlServiceServer = (*Runtime)(nil)
	_ streaming.Runtime                  = streams{}
)

// streams is the runtime as the streaming server sees it: what runs behind
// the URLs of Exec, Attach and PortForward (shell.go, attach.go,
// port_forward.go).
type streams struct{ r *Runtime }

// New returns an empty runtime holding opts.Images.
func New(opts Options) *Runtime {
	r := &Runtime{
		clock:       opts.Clock,
		logger:      opts.Logger,
		logFromCtx:  opts.LoggerFromContext,
		name:        opts.RuntimeName,
		version:     opts.RuntimeVersion,
		timeoutUnit: opts.TimeoutUnit,
		cgroups:     runtimeapi.CgroupDriver_CGROUPFS,
		st:          newStore(),
	}
	if opts.SystemdCgroups {
		r.cgroups = runtimeapi.CgroupDriver_SYSTEMD
	}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.logger == nil {
		r.logger = zap.NewNop()
	}
	if r.name == "" {
		r.name = DefaultRuntimeName
	}
	if r.version == "" {
		r.version = DefaultRuntimeVersion
	}
	if r.timeoutUnit <= 0 {
		r.timeoutUnit = time.Second
	}
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	r.faults = newFaults(rand.New(rand.NewPCG(seed, seed^0x5eed)))
	buf := opts.EventBuffer
	if buf <= 0 {
		buf = 1024
	}
	r.events = newBroker(buf)
	r.streaming = newStreamServer(opts.StreamingAddr, streams{r}, r.logger)
	if err := r.Preload(opts.Images...); err != nil {
		panic("fake.New: " + err.Error())
	}
	return r
}

// Control returns the FakeControlService server (the runtime itself).
func (r *Runtime) Control() gatewayv1.FakeControlServiceServer { return r }

// Close stops every scripted-exit timer, ends every event subscription and
// stops the streaming server, ending its sessions; URLs handed out before no
// longer connect. The state stays readable; Close is idempotent.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		for _, c := range r.st.containers {
			c.stopTimer()
		}
		r.mu.Unlock()
		r.events.close()
		r.streaming.close()
	})
	return nil
}

// now returns the current time in Unix nanoseconds from the runtime's clock.
func (r *Runtime) now() int64 { return r.clock().UnixNano() }

// log returns the request-scoped logger when there is one.
func (r *Runtime) log(ctx context.Context) *zap.Logger {
	if r.logFromCtx != nil && ctx != nil {
		if l := r.logFromCtx(ctx); l != nil {
			return l
		}
	}
	return r.logger
}

// errClosed is returned by streams ended because the runtime closed.
var errClosed = errors.New("fake runtime closed")
