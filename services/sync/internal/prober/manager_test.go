package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/splitlet/splitlet/internal/testwait"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/status"
)

func TestUpdatePodStatus(t *testing.T) {
	sidecar := v1.ContainerRestartPolicyAlways
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}} // started now, set below
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	exited := func(code int32) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}
	}
	id := container.BuildContainerID("containerd", "c1")
	tests := []struct {
		desc        string
		init        bool // the container is an init container
		sidecar     bool
		state       v1.ContainerState
		workers     []probeType
		startup     *kuberuntime.ProbeResult
		readiness   *kuberuntime.ProbeResult
		wantStarted bool
		wantReady   bool
		wantTrigger bool // a readiness run was requested
		// before: the container started before the manager (sync
		// restarted); podReady: the pod's last status was Ready.
		before, podReady bool
	}{
		{desc: "no probes: started and ready", state: running, wantStarted: true, wantReady: true},
		{desc: "not running: neither", state: waiting},
		{desc: "startup probe not run yet: not started, not ready", state: running, workers: []probeType{startup}},
		{desc: "startup unknown result: not started", state: running, workers: []probeType{startup}, startup: ptr(unk)},
		{desc: "startup failed: not started", state: running, workers: []probeType{startup}, startup: ptr(fail)},
		{desc: "startup succeeded, no readiness probe: ready", state: running, workers: []probeType{startup}, startup: ptr(ok),
			wantStarted: true, wantReady: true},
		{desc: "readiness not run yet: not ready, and a run is triggered", state: running, workers: []probeType{readiness},
			wantStarted: true, wantTrigger: true},
		{desc: "readiness failed: not ready", state: running, workers: []probeType{readiness}, readiness: ptr(fail),
			wantStarted: true, wantTrigger: true},
		{desc: "readiness succeeded: ready", state: running, workers: []probeType{readiness}, readiness: ptr(ok),
			wantStarted: true, wantReady: true},
		{desc: "init container exited 0: ready", init: true, state: exited(0), wantReady: true},
		{desc: "init container exited 1: not ready", init: true, state: exited(1)},
		{desc: "init container running: started but not ready", init: true, state: running, wantStarted: true},
		{desc: "sidecar with readiness success: ready", init: true, sidecar: true, state: running,
			workers: []probeType{readiness}, readiness: ptr(ok), wantStarted: true, wantReady: true},
		{desc: "sidecar without readiness result: not ready", init: true, sidecar: true, state: running,
			workers: []probeType{readiness}, wantStarted: true, wantTrigger: true},
		{desc: "sidecar exited 0 is not ready", init: true, sidecar: true, state: exited(0)},
		{desc: "running before sync restarted, pod was Ready: stays ready until readiness reports",
			state: running, workers: []probeType{readiness}, before: true, podReady: true,
			wantStarted: true, wantReady: true, wantTrigger: true},
		{desc: "running before sync restarted, pod was not Ready: not ready",
			state: running, workers: []probeType{readiness}, before: true,
			wantStarted: true, wantTrigger: true},
		{desc: "running before sync restarted: a readiness failure still counts",
			state: running, workers: []probeType{readiness}, readiness: ptr(fail), before: true, podReady: true,
			wantStarted: true, wantTrigger: true},
		{desc: "started before, startup probe not run again: stays started",
			state: running, workers: []probeType{startup}, before: true, podReady: true,
			wantStarted: true, wantReady: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := newTestManager(ctx, newFakeStatus(), &fakeExecer{}, nil, time.Millisecond)
			drain(ctx, m)
			c := v1.Container{Name: "app", StartupProbe: execProbe(nil), ReadinessProbe: execProbe(nil)}
			if tc.sidecar {
				c.RestartPolicy = &sidecar
			}
			pod := testPod(v1.Container{Name: "main"})
			if tc.init {
				pod.Spec.InitContainers = []v1.Container{c}
			} else {
				pod.Spec.Containers = []v1.Container{c}
			}
			var ws []*worker
			for _, pt := range tc.workers {
				w := newWorker(m, pt, pod, c)
				m.workers[probeKey{pod.UID, c.Name, pt}] = w
				ws = append(ws, w)
			}
			if tc.startup != nil {
				m.startup.Set(id, *tc.startup, pod.UID)
			}
			if tc.readiness != nil {
				m.readiness.Set(id, *tc.readiness, pod.UID)
			}
			cs := v1.ContainerStatus{Name: "app", ContainerID: id.String(), State: tc.state}
			if cs.State.Running != nil {
				// Started after the manager: with its 1 ms time unit, a
				// start time taken when the table was built would count
				// as "before sync restarted" on a loaded machine.
				cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.Now()}
			}
			if tc.before {
				cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now().Add(-time.Hour))}
				started := true
				cs.Started = &started // as the last status said
			}
			if tc.podReady {
				pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
			}
			s := &v1.PodStatus{}
			if tc.init {
				s.InitContainerStatuses = []v1.ContainerStatus{cs}
			} else {
				s.ContainerStatuses = []v1.ContainerStatus{cs}
			}
			m.UpdatePodStatus(pod, s)
			got := append(s.InitContainerStatuses, s.ContainerStatuses...)[0]
			if got.Started == nil || *got.Started != tc.wantStarted || got.Ready != tc.wantReady {
				t.Errorf("started=%v ready=%v, want started=%v ready=%v", deref(got.Started), got.Ready, tc.wantStarted, tc.wantReady)
			}
			triggered := false
			for _, w := range ws {
				if w.probeType == readiness && len(w.manualTriggerCh) == 1 {
					triggered = true
				}
			}
			if triggered != tc.wantTrigger {
				t.Errorf("readiness triggered = %v, want %v", triggered, tc.wantTrigger)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// eventually polls cond until it holds or 10 s pass.
var eventually = testwait.For

func serverPort(t *testing.T, rawURL string) int32 {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// TestManagerEndToEnd runs real workers against real servers on 127.0.0.1:
// a gRPC startup probe holds back an HTTP readiness probe and a TCP
// liveness probe; once it passes the container becomes started and ready;
// readiness follows the HTTP status; liveness failure is announced on the
// liveness updates channel; RemovePod stops every worker and forgets the
// results.
func TestManagerEndToEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// gRPC health server, not serving at first.
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Counts the startup probes, so the test can wait for several to have
	// failed rather than for a guessed time.
	var startupProbes atomic.Int32
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		startupProbes.Add(1)
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(gl) }()
	defer gs.Stop()

	// HTTP readiness endpoint with a switchable status code.
	var code atomic.Int32
	var hits atomic.Int32
	code.Store(http.StatusOK)
	hsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(int(code.Load()))
	}))
	defer hsrv.Close()

	// TCP liveness endpoint, closed later.
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	c := v1.Container{
		Name:  "app",
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: serverPort(t, hsrv.URL)}},
		StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(gl.Addr().(*net.TCPAddr).Port)}},
			PeriodSeconds: 1, TimeoutSeconds: 50, FailureThreshold: 10000},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
			PeriodSeconds: 1, TimeoutSeconds: 50},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(tl.Addr().(*net.TCPAddr).Port)}},
			PeriodSeconds: 1, TimeoutSeconds: 50, FailureThreshold: 2},
	}
	pod := testPod(c)
	st, rec := newFakeStatus(), &fakeRecorder{}
	st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now(), false))
	m := newTestManager(ctx, st, &fakeExecer{}, rec, 10*time.Millisecond)
	id := container.BuildContainerID("containerd", "c1")

	livenessUpdates := make(chan Update, 100)
	go func() {
		for {
			select {
			case u := <-m.LivenessResults().Updates():
				livenessUpdates <- u
			case <-m.ReadinessResults().Updates():
			case <-m.StartupResults().Updates():
			case <-ctx.Done():
				return
			}
		}
	}()
	// Regenerate the status as the sync loop would, so workers see
	// started flip.
	current := func() v1.PodStatus {
		s, _ := st.GetPodStatus(pod.UID)
		m.UpdatePodStatus(pod, &s)
		st.set(pod.UID, s)
		return s
	}
	m.AddPod(pod)
	m.AddPod(pod) // idempotent
	if n := m.workerCount(); n != 3 {
		t.Fatalf("workers = %d, want 3", n)
	}
	// Regenerated only once the workers exist: before, a container with a
	// startup probe but no startup worker yet counts as started (as in the
	// kubelet's UpdatePodStatus), and the readiness worker would take that
	// status and probe (a race seen in CI).
	go func() {
		// At the sync loop's pace until the test ends.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			current()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	// While the startup probe fails, nothing else runs: ten failed startup
	// probes are ten probe periods, in which the readiness and liveness
	// workers (same period) had their turns too.
	eventually(t, "ten failed startup probes", func() bool { return startupProbes.Load() >= 10 })
	if s := current(); *s.ContainerStatuses[0].Started || s.ContainerStatuses[0].Ready {
		t.Fatalf("started/ready before the startup probe passed: %+v", s.ContainerStatuses[0])
	}
	if hits.Load() != 0 {
		t.Fatalf("readiness probed %d times before startup passed", hits.Load())
	}

	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	eventually(t, "started and ready", func() bool {
		s := current()
		return *s.ContainerStatuses[0].Started && s.ContainerStatuses[0].Ready
	})
	if hits.Load() == 0 {
		t.Errorf("ready without an HTTP probe")
	}

	code.Store(http.StatusServiceUnavailable)
	eventually(t, "not ready after 503", func() bool { return !current().ContainerStatuses[0].Ready })

	tl.Close()
	eventually(t, "a liveness failure update", func() bool {
		for {
			select {
			case u := <-livenessUpdates:
				if u.Result == fail {
					if u.ContainerID != id || u.PodUID != pod.UID {
						t.Errorf("update = %+v", u)
					}
					return true
				}
			default:
				return false
			}
		}
	})
	if m.Liveness(id) != fail {
		t.Errorf("Liveness(c1) = %v, want Failure", m.Liveness(id))
	}
	if !slices.Contains(rec.list(), "Warning Unhealthy app: Readiness probe failed: HTTP probe failed with statuscode: 503") {
		t.Errorf("no readiness failure event in %q", rec.list())
	}

	m.RemovePod(pod)
	eventually(t, "workers to exit", func() bool { return m.workerCount() == 0 })
	for _, rm := range []*ResultsManager{m.liveness, m.readiness, m.startup} {
		if r, found := rm.Get(id); found {
			t.Errorf("result %v kept after RemovePod", r)
		}
	}
}

func TestCleanupPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newFakeStatus()
	m := newTestManager(ctx, st, &fakeExecer{script: []execReply{pass}}, nil, 10*time.Millisecond)
	drain(ctx, m)
	keep, drop := testPod(v1.Container{Name: "a", ReadinessProbe: execProbe(nil)}), testPod(v1.Container{Name: "a", LivenessProbe: execProbe(nil)})
	drop.UID = "uid-2"
	// A sidecar's probes are run too; an ordinary init container's are not.
	sidecar := v1.ContainerRestartPolicyAlways
	keep.Spec.InitContainers = []v1.Container{
		{Name: "side", RestartPolicy: &sidecar, LivenessProbe: execProbe(nil)},
		{Name: "setup", LivenessProbe: execProbe(nil)},
	}
	m.AddPod(keep)
	m.AddPod(drop)
	if n := m.workerCount(); n != 3 {
		t.Fatalf("workers = %d, want 3 (keep: a readiness, side liveness; drop: a liveness)", n)
	}
	m.CleanupPods(map[types.UID]struct{}{keep.UID: {}})
	eventually(t, "drop's worker to exit", func() bool { return m.workerCount() == 2 })
	if _, ok := m.getWorker(keep.UID, "side", liveness); !ok {
		t.Errorf("the sidecar's worker was stopped")
	}
	cancel()
	m.wg.Wait() // every worker ends with the manager's context
}

// The Manager sets started and ready in the status generator.
var _ status.Probes = (*Manager)(nil)

func TestResultsManagerUpdates(t *testing.T) {
	rm := NewResultsManager()
	id := container.BuildContainerID("containerd", "c1")
	rm.Set(id, ok, "uid")
	rm.Set(id, ok, "uid") // unchanged: no update
	rm.Set(id, fail, "uid")
	var got []kuberuntime.ProbeResult
	for len(rm.Updates()) > 0 {
		u := <-rm.Updates()
		if u.ContainerID != id || u.PodUID != "uid" {
			t.Errorf("update = %+v", u)
		}
		got = append(got, u.Result)
	}
	if !slices.Equal(got, []kuberuntime.ProbeResult{ok, fail}) {
		t.Errorf("updates = %v, want [Success Failure]", got)
	}
	rm.Remove(id)
	if _, found := rm.Get(id); found {
		t.Errorf("result kept after Remove")
	}
}

// TestShutdownWithUndrainedUpdates: workers blocked on a full updates
// channel still exit when the manager's context ends.
func TestShutdownWithUndrainedUpdates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st := newFakeStatus()
	m := newTestManager(ctx, st, &fakeExecer{script: []execReply{failed, pass}}, nil, time.Millisecond)
	var pods []*v1.Pod
	for i := range 30 { // more changes than the channel buffers
		p := testPod(v1.Container{Name: "app", ReadinessProbe: execProbe(nil)})
		p.UID = types.UID("uid-" + strconv.Itoa(i))
		st.set(p.UID, runningStatus("app", "containerd://c"+strconv.Itoa(i), time.Now(), true))
		pods = append(pods, p)
		m.AddPod(p)
	}
	eventually(t, "the updates channel to fill", func() bool { return len(m.readiness.Updates()) == updatesBuffer })
	cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("workers still running after the context ended")
	}
}
