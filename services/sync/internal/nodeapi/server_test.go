package nodeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

const testNode = "node-1"

// fakeAuth authenticates "Authorization: Bearer <user>" for the users it
// knows and allows each user the node subresources listed for them.
type fakeAuth struct {
	allowed map[string][]string // user -> subresources
	failAll bool                // the authorizer errs
}

func (f fakeAuth) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, false, nil
	}
	if _, known := f.allowed[name]; !known {
		return nil, false, errors.New("invalid bearer token")
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

func (f fakeAuth) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if f.failAll {
		return authorizer.DecisionNoOpinion, "", errors.New("authorizer down")
	}
	if a.GetResource() != "nodes" || a.GetName() != testNode || a.GetAPIVersion() != "v1" {
		return authorizer.DecisionNoOpinion, "wrong node", nil
	}
	for _, sub := range f.allowed[a.GetUser().GetName()] {
		if sub == a.GetSubresource() {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

var _ Auth = fakeAuth{}

// fakePods is a PodLister over a fixed set.
type fakePods []*v1.Pod

func (f fakePods) GetPodByFullName(ns, name string) *v1.Pod {
	for _, p := range f {
		if p.Namespace == ns && p.Name == name {
			return p.DeepCopy()
		}
	}
	return nil
}

func (f fakePods) GetPodsWithStatus() []*v1.Pod { return f }

// fakeRuntime holds sandboxes and containers and applies the state and
// label filters of List calls, as a CRI runtime does. Its Exec, Attach and
// PortForward (streaming_test.go) hand out URLs of streams, a real
// streaming server, and record the requests.
type fakeRuntime struct {
	mu         sync.Mutex
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	statuses   map[string]*runtimeapi.ContainerStatus
	streams    streaming.Server
	requests   []proto.Message // Exec, Attach and PortForward requests, in order
	streamErr  error           // what Exec, Attach and PortForward answer, when set
	// checkpointErr is what CheckpointContainer answers, when set
	// (checkpoint_test.go).
	checkpointErr error
}

// hasLabels reports whether labels carry every pair of selector.
func hasLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, in *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		if st := in.GetFilter().GetState(); st != nil && st.State != s.State {
			continue
		}
		if !hasLabels(s.GetLabels(), in.GetFilter().GetLabelSelector()) {
			continue
		}
		out = append(out, s)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, in *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		if st := in.GetFilter().GetState(); st != nil && st.State != c.State {
			continue
		}
		if !hasLabels(c.GetLabels(), in.GetFilter().GetLabelSelector()) {
			continue
		}
		out = append(out, c)
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, in *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[in.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", in.GetContainerId())
	}
	return &runtimeapi.ContainerStatusResponse{Status: proto.Clone(st).(*runtimeapi.ContainerStatus)}, nil
}

func (f *fakeRuntime) exit(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[id].State = runtimeapi.ContainerState_CONTAINER_EXITED
}

var _ Runtime = (*fakeRuntime)(nil)

var logBase = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// criLine is one CRI log line written sec seconds after logBase.
func criLine(sec int, stream, content string) string {
	return fmt.Sprintf("%s %s F %s\n", logBase.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, content)
}

func labels(uid, ns, name, container string) map[string]string {
	l := map[string]string{kuberuntime.KubernetesPodUIDLabel: uid, kuberuntime.KubernetesPodNamespaceLabel: ns, kuberuntime.KubernetesPodNameLabel: name}
	if container != "" {
		l[kuberuntime.KubernetesContainerNameLabel] = container
	}
	return l
}

// fixture is a node with pod default/web (containers app, running with
// two restarts behind it, and side, waiting) and its logs.
type fixture struct {
	srv     *Server
	rt      *fakeRuntime
	curLog  string
	metrics *prometheus.Registry
}

func newFixture(t *testing.T, auth Auth) *fixture {
	t.Helper()
	dir := t.TempDir()
	curLog, oldLog := filepath.Join(dir, "app", "1.log"), filepath.Join(dir, "app", "0.log")
	if err := os.MkdirAll(filepath.Dir(curLog), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, content string) {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(oldLog, criLine(0, "stdout", "previous run"))
	write(curLog, criLine(10, "stdout", "one")+criLine(20, "stderr", "two")+criLine(30, "stdout", "three"))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []v1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://cur", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://old"}}},
			{Name: "side", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull"}}},
		}},
	}
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "static-node-1", UID: "uid-static"}}
	rt := &fakeRuntime{
		sandboxes: []*runtimeapi.PodSandbox{
			{Id: "sb-web", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: labels("uid-web", "default", "web", "")},
			{Id: "sb-gone", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Labels: labels("uid-gone", "default", "gone", "")},
			{Id: "sb-foreign", State: runtimeapi.PodSandboxState_SANDBOX_READY},
		},
		containers: []*runtimeapi.Container{
			{Id: "cur", State: runtimeapi.ContainerState_CONTAINER_RUNNING, Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}, Labels: labels("uid-web", "default", "web", "app")},
			{Id: "old", State: runtimeapi.ContainerState_CONTAINER_EXITED, Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}, Labels: labels("uid-web", "default", "web", "app")},
		},
		statuses: map[string]*runtimeapi.ContainerStatus{
			"cur": {Id: "cur", State: runtimeapi.ContainerState_CONTAINER_RUNNING, LogPath: curLog},
			"old": {Id: "old", State: runtimeapi.ContainerState_CONTAINER_EXITED, LogPath: oldLog},
		},
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "kubelet_test_total", Help: "a test counter"}))
	srv := New(Options{
		NodeName: testNode, Pods: fakePods{other, pod}, Runtime: rt, Metrics: reg, Auth: auth,
		Flags: map[string]string{"node-name": testNode, "manifest-url-header": "CLASSIFIED"},
		Now:   func() time.Time { return logBase.Add(35 * time.Second) },
	})
	return &fixture{srv: srv, rt: rt, curLog: curLog, metrics: reg}
}

// admin may do everything on the node.
var admin = fakeAuth{allowed: map[string][]string{
	"admin":  {"proxy", "log", "stats", "metrics", "healthz", "pods"},
	"nobody": nil,
	"logs":   {"log"},
	"pods":   {"pods"},
	"scrape": {"metrics"},
	"health": {"healthz"},
	"stats":  {"stats"},
	"proxy":  {"proxy"},
	// /flagz is authorized as nodes/configz, as the kubelet's.
	"configz":    {"configz"},
	"checkpoint": {"checkpoint"},
	"statusz":    {"statusz"},
}}

func get(t *testing.T, h http.Handler, path, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestAuthFilter(t *testing.T) {
	f := newFixture(t, admin)
	down := newFixture(t, fakeAuth{allowed: admin.allowed, failAll: true})
	for _, tc := range []struct {
		desc     string
		srv      *Server
		path     string
		token    string
		want     int
		wantBody string
	}{
		{desc: "no credentials: 401", path: "/pods", want: 401, wantBody: "Unauthorized"},
		{desc: "a token nobody knows: 401", path: "/pods", token: "stranger", want: 401, wantBody: "Unauthorized"},
		{desc: "authenticated, nothing allowed: 403 naming user and subresources", path: "/containerLogs/default/web/app", token: "nobody", want: 403,
			wantBody: "Forbidden (user=nobody, verb=get, resource=nodes, subresource(s)=[proxy])"},
		{desc: "nodes/log does not open containerLogs (nodes/proxy does)", path: "/containerLogs/default/web/app", token: "logs", want: 403},
		{desc: "nodes/proxy opens containerLogs", path: "/containerLogs/default/web/app", token: "admin", want: 200},
		{desc: "nodes/pods opens /pods", path: "/pods", token: "pods", want: 200},
		{desc: "nodes/pods opens /runningpods/", path: "/runningpods/", token: "pods", want: 200},
		{desc: "nodes/pods does not open containerLogs", path: "/containerLogs/default/web/app", token: "pods", want: 403,
			wantBody: "subresource(s)=[proxy]"},
		{desc: "nodes/metrics opens /metrics", path: "/metrics", token: "scrape", want: 200},
		{desc: "nodes/healthz opens /healthz", path: "/healthz", token: "health", want: 200},
		{desc: "healthz asks for healthz, then proxy", path: "/healthz", token: "nobody", want: 403, wantBody: "subresource(s)=[healthz proxy]"},
		{desc: "unknown paths are authorized first", path: "/nope", token: "nobody", want: 403},
		{desc: "unknown paths 404 once authorized", path: "/nope", token: "admin", want: 404},
		{desc: "authorizer error: 500", srv: down.srv, path: "/pods", token: "admin", want: 500, wantBody: "Authorization error (user=admin, verb=get, resource=nodes, subresource=pods)"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			srv := tc.srv
			if srv == nil {
				srv = f.srv
			}
			code, body := get(t, srv, tc.path, tc.token)
			if code != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Fatalf("GET %s as %q: %d %q, want %d containing %q", tc.path, tc.token, code, body, tc.want, tc.wantBody)
			}
		})
	}
}

func TestRequestAttributes(t *testing.T) {
	u := &user.DefaultInfo{Name: "u"}
	for _, tc := range []struct {
		method, path string
		wantVerb     string
		wantSubs     []string
	}{
		{"GET", "/containerLogs/ns/p/c", "get", []string{"proxy"}},
		{"POST", "/exec/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/exec/ns/p/uid/c", "get", []string{"proxy"}},
		{"POST", "/attach/ns/p/c", "create", []string{"proxy"}},
		{"POST", "/portForward/ns/p", "create", []string{"proxy"}},
		{"GET", "/portForward/ns/p/uid", "get", []string{"proxy"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/syncloop", "get", []string{"healthz", "proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"PUT", "/configz", "update", []string{"configz", "proxy"}},
		{"DELETE", "/checkpoint/ns/p/c", "delete", []string{"checkpoint"}},
		{"PATCH", "/flagz", "patch", []string{"configz"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			attrs := requestAttributes(testNode, u, httptest.NewRequest(tc.method, tc.path, nil))
			var subs []string
			for _, a := range attrs {
				subs = append(subs, a.GetSubresource())
				if a.GetVerb() != tc.wantVerb || a.GetResource() != "nodes" || a.GetName() != testNode || !a.IsResourceRequest() || a.GetPath() != tc.path {
					t.Errorf("attributes %+v", a)
				}
			}
			if strings.Join(subs, ",") != strings.Join(tc.wantSubs, ",") {
				t.Errorf("subresources %v, want %v", subs, tc.wantSubs)
			}
		})
	}
}

func TestPods(t *testing.T) {
	f := newFixture(t, admin)
	for _, tc := range []struct {
		desc  string
		path  string
		want  []string // namespace/name
		check func(t *testing.T, l v1.PodList)
	}{
		{desc: "the pods sync runs, with status", path: "/pods", want: []string{"kube-system/static-node-1", "default/web"},
			check: func(t *testing.T, l v1.PodList) {
				if l.Items[1].Status.Phase != v1.PodRunning || len(l.Items[1].Spec.InitContainers) != 1 {
					t.Errorf("web: phase %q, %d init containers; want the whole pod", l.Items[1].Status.Phase, len(l.Items[1].Spec.InitContainers))
				}
			}},
		{desc: "the pods the runtime runs: ready sandboxes, running containers, labelled", path: "/runningpods/", want: []string{"default/web"},
			check: func(t *testing.T, l v1.PodList) {
				p := l.Items[0]
				if p.UID != "uid-web" || len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != "app" || p.Spec.Containers[0].Image != "busybox:1.36" {
					t.Errorf("running pod %+v: want uid-web with its running container app (busybox:1.36)", p)
				}
			}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, body := get(t, f.srv, tc.path, "admin")
			if code != 200 {
				t.Fatalf("GET %s: %d %s", tc.path, code, body)
			}
			var l v1.PodList
			if err := json.Unmarshal([]byte(body), &l); err != nil {
				t.Fatal(err)
			}
			if l.Kind != "PodList" || l.APIVersion != "v1" {
				t.Errorf("kind %q apiVersion %q, want a v1 PodList", l.Kind, l.APIVersion)
			}
			var got []string
			for _, p := range l.Items {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("pods %v, want %v", got, tc.want)
			}
			tc.check(t, l)
		})
	}
}

func TestMetricsAndHealthz(t *testing.T) {
	f := newFixture(t, admin)
	if code, body := get(t, f.srv, "/metrics", "admin"); code != 200 || !strings.Contains(body, "kubelet_test_total 0") {
		t.Errorf("/metrics: %d %q, want sync's registry", code, body)
	}
	if code, body := get(t, f.srv, "/healthz", "admin"); code != 200 || body != "ok" {
		t.Errorf("/healthz: %d %q, want 200 ok", code, body)
	}
	sick := New(Options{NodeName: testNode, Pods: fakePods{}, Runtime: f.rt, Metrics: f.metrics, Auth: admin,
		Healthy: func() error { return errors.New("sync loop stuck") }})
	if code, body := get(t, sick, "/healthz", "admin"); code != 500 || !strings.Contains(body, "syncloop failed") {
		t.Errorf("/healthz of a stuck sync loop: %d %q, want 500 naming syncloop", code, body)
	}
}

func TestContainerLogs(t *testing.T) {
	f := newFixture(t, admin)
	const url = "/containerLogs/default/web/app"
	for _, tc := range []struct {
		desc     string
		path     string
		want     int
		wantBody string
	}{
		{desc: "the current instance, both streams", path: url, want: 200, wantBody: "one\ntwo\nthree\n"},
		{desc: "tailLines", path: url + "?tailLines=2", want: 200, wantBody: "two\nthree\n"},
		{desc: "tailLines=0", path: url + "?tailLines=0", want: 200, wantBody: ""},
		{desc: "the old tail parameter", path: url + "?tail=1", want: 200, wantBody: "three\n"},
		{desc: "tail=all is everything", path: url + "?tail=all&tailLines=1", want: 200, wantBody: "one\ntwo\nthree\n"},
		{desc: "previous", path: url + "?previous=true", want: 200, wantBody: "previous run\n"},
		{desc: "previous=false", path: url + "?previous=false", want: 200, wantBody: "one\ntwo\nthree\n"},
		{desc: "timestamps", path: url + "?timestamps=true&tailLines=1", want: 200, wantBody: "2026-03-04T05:06:37.000000000Z three\n"},
		{desc: "limitBytes", path: url + "?limitBytes=6", want: 200, wantBody: "one\ntw"},
		{desc: "sinceTime", path: url + "?sinceTime=2026-03-04T05:06:27Z", want: 200, wantBody: "two\nthree\n"},
		{desc: "sinceSeconds counts back from now", path: url + "?sinceSeconds=10", want: 200, wantBody: "three\n"},
		{desc: "stream All", path: url + "?stream=All", want: 200, wantBody: "one\ntwo\nthree\n"},
		{desc: "one stream is refused, as by a kubelet without PodLogsQuerySplitStreams", path: url + "?stream=Stdout", want: 400, wantBody: "unable to return the given log stream"},
		{desc: "bad integer: 400", path: url + "?tailLines=x", want: 400, wantBody: "Unable to decode query"},
		{desc: "bad time: 400", path: url + "?sinceTime=yesterday", want: 400, wantBody: "Unable to decode query"},
		{desc: "negative tailLines: 422", path: url + "?tailLines=-1", want: 422, wantBody: "tailLines"},
		{desc: "limitBytes=0: 422", path: url + "?limitBytes=0", want: 422, wantBody: "limitBytes"},
		{desc: "since twice: 422", path: url + "?sinceSeconds=5&sinceTime=2026-03-04T05:06:27Z", want: 422, wantBody: "at most one"},
		{desc: "unknown stream: 422", path: url + "?stream=Both", want: 422, wantBody: "stream"},
		{desc: "unknown pod: 404", path: "/containerLogs/default/nope/app", want: 404, wantBody: `pod "nope" does not exist`},
		{desc: "pod of another namespace: 404", path: "/containerLogs/other/web/app", want: 404},
		{desc: "unknown container: 404", path: "/containerLogs/default/web/nope", want: 404, wantBody: `container "nope" not found in pod "web"`},
		{desc: "a waiting container: 400 with the kubelet's reason", path: "/containerLogs/default/web/side", want: 400,
			wantBody: `container "side" in pod "web" is waiting to start: image can't be pulled`},
		{desc: "an init container without a status: 400", path: "/containerLogs/default/web/init", want: 400, wantBody: "is not available"},
		{desc: "no previous instance: 400", path: "/containerLogs/default/web/side?previous=1", want: 400, wantBody: "previous terminated container"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, body := get(t, f.srv, tc.path, "admin")
			if code != tc.want {
				t.Fatalf("GET %s: %d %q, want %d", tc.path, code, body, tc.want)
			}
			if tc.want == 200 && body != tc.wantBody || tc.want != 200 && !strings.Contains(body, tc.wantBody) {
				t.Fatalf("GET %s: body %q, want %q", tc.path, body, tc.wantBody)
			}
		})
	}
}

// TestContainerLogsFollow: a followed log sends what the container writes
// as it writes it, and ends once the container has exited.
func TestContainerLogsFollow(t *testing.T) {
	f := newFixture(t, admin)
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/containerLogs/default/web/app?follow=true&tailLines=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer admin")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := bufio.NewReader(resp.Body)
	readLine := func(want string) {
		t.Helper()
		got, err := lines.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	readLine("three\n")
	// Written after the follow started: it reaches the client while the
	// response is still open.
	appendLog(t, f.curLog, criLine(40, "stdout", "four"))
	readLine("four\n")
	appendLog(t, f.curLog, criLine(50, "stderr", "five"))
	f.rt.exit("cur")
	readLine("five\n")
	if rest, err := io.ReadAll(lines); err != nil || len(rest) != 0 {
		t.Fatalf("after the container exited: %q, %v; want the end of the log", rest, err)
	}
}

func appendLog(t *testing.T, path, content string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(content); err != nil {
		t.Fatal(err)
	}
}
