package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/splitlet/splitlet/services/sync/internal/config"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podresources"
)

func TestAddOpsProfiling(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		profiling bool
		path      string
		want      int
	}{
		{desc: "metrics always served", path: "/metrics", want: http.StatusOK},
		{desc: "healthz always served", path: "/healthz", want: http.StatusOK},
		{desc: "pprof off by default", path: "/debug/pprof/cmdline", want: http.StatusNotFound},
		{desc: "pprof cmdline with --profiling", profiling: true, path: "/debug/pprof/cmdline", want: http.StatusOK},
		{desc: "pprof index with --profiling", profiling: true, path: "/debug/pprof/", want: http.StatusOK},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			mux := http.NewServeMux()
			addOps(mux, prometheus.NewRegistry(), tc.profiling)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.want {
				t.Fatalf("GET %s: status %d, want %d", tc.path, rec.Code, tc.want)
			}
		})
	}
}

// TestPodCgroups: --cgroup-root= (empty) turns pod cgroup removal off, as
// does a runtime on the systemd driver; any other root turns it on.
func TestPodCgroups(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		root   string
		driver kuberuntime.CgroupDriver
		want   bool
	}{
		{desc: "empty root disables removal", root: "", driver: kuberuntime.CgroupfsDriver, want: false},
		{desc: "default root enables removal", root: "/sys/fs/cgroup", driver: kuberuntime.CgroupfsDriver, want: true},
		{desc: "systemd's slices are left to systemd", root: "/sys/fs/cgroup", driver: kuberuntime.SystemdDriver, want: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := &builder{cfg: config.Config{CgroupRoot: tc.root}, log: zap.NewNop(), cgroupDriver: tc.driver}
			if got := b.podCgroups() != nil; got != tc.want {
				t.Errorf("podCgroups with root %q and driver %s enabled = %v, want %v", tc.root, tc.driver, got, tc.want)
			}
		})
	}
}

// stages records, in order, the stages of a run that ended.
type stages struct {
	mu    sync.Mutex
	ended []string
}

func (s *stages) end(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = append(s.ended, name)
}

func (s *stages) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ended)
}

type fakeNetwork struct{}

func (fakeNetwork) Update(context.Context) {}

type fakeSyncLoop struct {
	s   *stages
	err error
}

func (f fakeSyncLoop) Run(ctx context.Context) error {
	<-ctx.Done()
	f.s.end("sync loop")
	return f.err
}

type fakeKeeper struct{ s *stages }

func (f fakeKeeper) Run(ctx context.Context) {
	<-ctx.Done()
	f.s.end("status keeper")
}

// newTestDaemon is a daemon of fakes whose stages record their end in s,
// serving one server on ln.
func newTestDaemon(s *stages, ln net.Listener, loopErr error) *daemon {
	return &daemon{
		streams: make(chan struct{}),
		log:     zap.NewNop(),
		servers: []netServer{httpServer{name: "test", srv: newHTTPServer(http.NotFoundHandler()), ln: ln}},
		background: []loop{{name: "source", run: func(ctx context.Context) {
			<-ctx.Done()
			s.end("source")
		}}},
		network: fakeNetwork{},
		kubelet: fakeSyncLoop{s: s, err: loopErr},
		keeper:  fakeKeeper{s: s},
	}
}

// TestRunStopsInDependencyOrder: the sources stop before the sync loop,
// the sync loop before the status keeper, whatever ended the run; the
// first error is returned.
func TestRunStopsInDependencyOrder(t *testing.T) {
	errLoop := errors.New("sync loop failed")
	for _, tc := range []struct {
		desc string
		// end ends the run: cancel is the context's, ln the server's
		// listener.
		end     func(cancel context.CancelFunc, ln net.Listener)
		loopErr error
		wantErr string
	}{
		{desc: "context ends", end: func(cancel context.CancelFunc, _ net.Listener) { cancel() }},
		{desc: "server fails", end: func(_ context.CancelFunc, ln net.Listener) { ln.Close() }, wantErr: "test: "},
		{desc: "sync loop error returned", end: func(cancel context.CancelFunc, _ net.Listener) { cancel() }, loopErr: errLoop, wantErr: errLoop.Error()},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var s stages
			d := newTestDaemon(&s, ln, tc.loopErr)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- d.run(ctx) }()
			tc.end(cancel, ln)
			select {
			case err = <-ran:
			case <-time.After(10 * time.Second):
				t.Fatal("run did not return")
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("run = %v, want an error containing %q", err, tc.wantErr)
			}
			if got, want := s.list(), []string{"source", "sync loop", "status keeper"}; !slices.Equal(got, want) {
				t.Errorf("stopped %v, want %v", got, want)
			}
		})
	}
}

// TestRunServesPodResources: the pod-resources API answers on its socket
// while sync runs, and when the run ends its server stops and the socket
// is gone.
func TestRunServesPodResources(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var s stages
	d := newTestDaemon(&s, ln, nil)
	path := filepath.Join(t.TempDir(), "pod-resources", "kubelet.sock")
	podLn, err := podresources.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	d.servers = append(d.servers, grpcServer{name: "pod resources", addr: path,
		srv: podresources.NewGRPCServer(podresources.New(activePods{web}, nil)), ln: podLn})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- d.run(ctx) }()

	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil || len(resp.GetPodResources()) != 1 || resp.GetPodResources()[0].GetName() != "web" {
		t.Fatalf("List = %v, %v; want web", resp, err)
	}
	cancel()
	select {
	case err = <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
	}
	if err != nil {
		t.Errorf("run = %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is left after the run: %v", err)
	}
}

// activePods is a podresources.PodsProvider whose pods are all active.
type activePods []*v1.Pod

func (a activePods) GetActivePods() []*v1.Pod { return a }

func (a activePods) GetActivePodByName(namespace, name string) (*v1.Pod, bool) {
	for _, p := range a {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// TestBackgroundWaitNamesStuckLoop: a loop that ignores its context does
// not hold the wait past its deadline, and is named in the log; the loops
// that ended are not.
func TestBackgroundWaitNamesStuckLoop(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	bg := startBackground(ctx, []loop{
		{name: "stuck", run: func(context.Context) { <-release }},
		{name: "prompt", run: func(ctx context.Context) { <-ctx.Done() }},
	})
	cancel()
	core, logs := observer.New(zap.WarnLevel)
	deadline, done := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer done()
	bg.wait(deadline, zap.New(core))
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("logged %d warnings, want 1", len(entries))
	}
	if got := entries[0].ContextMap()["loops"]; !reflect.DeepEqual(got, []any{"stuck"}) {
		t.Errorf("named loops %v, want [stuck]", got)
	}
}

func TestEndStreamsEndsStreamingCallsOnly(t *testing.T) {
	done := make(chan struct{})
	ender := endStreams(done)
	ended := make(chan error, 1)
	stream := ender.WrapStreamingHandler(func(ctx context.Context, _ connect.StreamingHandlerConn) error {
		<-ctx.Done()
		return ctx.Err()
	})
	go func() { ended <- stream(context.Background(), nil) }()
	unary := ender.WrapUnary(func(ctx context.Context, _ connect.AnyRequest) (connect.AnyResponse, error) {
		return nil, ctx.Err()
	})
	close(done)
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the stream ended with %v, want its context cancelled", err)
	}
	if _, err := unary(context.Background(), nil); err != nil {
		t.Errorf("a unary call after the close: %v, want its context untouched", err)
	}
}
