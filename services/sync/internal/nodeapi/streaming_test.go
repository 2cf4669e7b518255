package nodeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	clientexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

func (f *fakeRuntime) record(req proto.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, proto.Clone(req))
	if f.streamErr != nil {
		return f.streamErr
	}
	if f.streams == nil {
		return status.Error(codes.Unimplemented, "no streaming server")
	}
	return nil
}

// takeRequests returns the streaming requests recorded so far and forgets
// them.
func (f *fakeRuntime) takeRequests() []proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

func (f *fakeRuntime) Exec(_ context.Context, in *runtimeapi.ExecRequest, _ ...grpc.CallOption) (*runtimeapi.ExecResponse, error) {
	if err := f.record(in); err != nil {
		return nil, err
	}
	return f.streams.GetExec(in)
}

func (f *fakeRuntime) Attach(_ context.Context, in *runtimeapi.AttachRequest, _ ...grpc.CallOption) (*runtimeapi.AttachResponse, error) {
	if err := f.record(in); err != nil {
		return nil, err
	}
	return f.streams.GetAttach(in)
}

func (f *fakeRuntime) PortForward(_ context.Context, in *runtimeapi.PortForwardRequest, _ ...grpc.CallOption) (*runtimeapi.PortForwardResponse, error) {
	if err := f.record(in); err != nil {
		return nil, err
	}
	return f.streams.GetPortForward(in)
}

// scriptedStreams is the containers' side of the streaming server: a few
// commands, an attach that greets, and an echo behind every port.
type scriptedStreams struct{}

var _ streaming.Runtime = scriptedStreams{}

// The commands scriptedStreams runs.
var (
	cmdHiErrExit3 = []string{"sh", "-c", "echo hi; echo err >&2; exit 3"}
	cmdCat        = []string{"cat"}
)

func (scriptedStreams) Exec(_ context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, _ bool, _ <-chan remotecommandserver.TerminalSize) error {
	switch strings.Join(cmd, " ") {
	case strings.Join(cmdHiErrExit3, " "):
		fmt.Fprintln(out, "hi")
		fmt.Fprintln(errOut, "err")
		return utilexec.CodeExitError{Err: errors.New("command terminated with exit code 3"), Code: 3}
	case strings.Join(cmdCat, " "):
		_, err := io.Copy(out, in)
		return err
	}
	return fmt.Errorf("%s: unknown command %q", id, cmd)
}

func (scriptedStreams) Attach(_ context.Context, id string, _ io.Reader, out, _ io.WriteCloser, tty bool, _ <-chan remotecommandserver.TerminalSize) error {
	_, err := fmt.Fprintf(out, "attached to %s, tty %v\n", id, tty)
	return err
}

func (scriptedStreams) PortForward(_ context.Context, _ string, _ int32, stream io.ReadWriteCloser) error {
	_, err := io.Copy(stream, stream)
	return err
}

// streamingFixture is a node with pod default/shell (uid-shell): container
// app (running as "app-1"), term (a TTY, running as "term-1") and idle
// (not running), in ready sandbox "sb-shell"; the runtime's streaming
// server is real (k8s.io/cri-streaming, as containerd's is) and the node
// API is served over HTTP.
type streamingFixture struct {
	rt     *fakeRuntime
	node   *httptest.Server
	config *rest.Config // the node API, as admin
}

func newStreamingFixture(t *testing.T) *streamingFixture {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shell", UID: "uid-shell"},
		Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "app", Image: "busybox"}, {Name: "term", Image: "busybox", TTY: true, Stdin: true}, {Name: "idle", Image: "busybox"},
		}},
	}
	running := func(id, name string, created int64) *runtimeapi.Container {
		return &runtimeapi.Container{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: created,
			Labels: labels("uid-shell", "default", "shell", name)}
	}
	rt := &fakeRuntime{
		sandboxes: []*runtimeapi.PodSandbox{
			{Id: "sb-old", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 0}, Labels: labels("uid-shell", "default", "shell", "")},
			{Id: "sb-shell", State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 1}, Labels: labels("uid-shell", "default", "shell", "")},
		},
		containers: []*runtimeapi.Container{
			running("app-0", "app", 1), running("app-1", "app", 2), running("term-1", "term", 2),
			{Id: "idle-0", State: runtimeapi.ContainerState_CONTAINER_EXITED, Labels: labels("uid-shell", "default", "shell", "idle")},
		},
	}
	// The streaming server's URLs must name its address before it serves.
	runtimeSrv := httptest.NewUnstartedServer(nil)
	cfg := streaming.DefaultConfig
	cfg.Addr = runtimeSrv.Listener.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr}
	streams, err := streaming.NewServer(cfg, scriptedStreams{})
	if err != nil {
		t.Fatal(err)
	}
	runtimeSrv.Config.Handler = streams
	runtimeSrv.Start()
	t.Cleanup(runtimeSrv.Close)
	rt.streams = streams

	srv := New(Options{NodeName: testNode, Pods: fakePods{pod}, Runtime: rt, Auth: admin})
	node := httptest.NewServer(srv)
	t.Cleanup(node.Close)
	return &streamingFixture{rt: rt, node: node, config: &rest.Config{Host: node.URL, BearerToken: "admin"}}
}

// stream runs an exec or attach at path (with its query) over SPDY
// (POST, as kubectl before v1.30 and the API server towards a node) or
// WebSocket v5 (GET, as today's kubectl), and returns what came back.
func (f *streamingFixture) stream(t *testing.T, websocket bool, path string, opts remotecommand.StreamOptions) (stdout, stderr string, err error) {
	t.Helper()
	u, perr := url.Parse(f.node.URL + path)
	if perr != nil {
		t.Fatal(perr)
	}
	var exec remotecommand.Executor
	if websocket {
		exec, err = remotecommand.NewWebSocketExecutor(f.config, http.MethodGet, u.String())
	} else {
		exec, err = remotecommand.NewSPDYExecutor(f.config, http.MethodPost, u)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if opts.Stdout != nil {
		opts.Stdout = &out
	}
	if opts.Stderr != nil {
		opts.Stderr = &errOut
	}
	err = exec.StreamWithContext(t.Context(), opts)
	return out.String(), errOut.String(), err
}

// execQuery is the query the API server sends a node for
// `kubectl exec POD -- cmd...` (streamParams: input, output, error and
// tty as "1", the command as repeated "command").
func execQuery(stdin, tty bool, cmd ...string) string {
	q := url.Values{"output": {"1"}, "error": {"1"}, "command": cmd}
	if stdin {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	}
	return "?" + q.Encode()
}

func TestExec(t *testing.T) {
	f := newStreamingFixture(t)
	for _, websocket := range []bool{false, true} {
		name := "SPDY"
		if websocket {
			name = "WebSocket v5"
		}
		t.Run(name, func(t *testing.T) {
			stdout, stderr, err := f.stream(t, websocket, "/exec/default/shell/app"+execQuery(false, false, cmdHiErrExit3...),
				remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
			var exit clientexec.CodeExitError
			if !errors.As(err, &exit) || exit.Code != 3 {
				t.Errorf("exec: %v, want exit code 3", err)
			}
			if stdout != "hi\n" || stderr != "err\n" {
				t.Errorf("exec: stdout %q, stderr %q; want %q, %q", stdout, stderr, "hi\n", "err\n")
			}
			want := &runtimeapi.ExecRequest{ContainerId: "app-1", Cmd: cmdHiErrExit3, Stdout: true, Stderr: true}
			if got := f.rt.takeRequests(); len(got) != 1 || !proto.Equal(got[0], want) {
				t.Errorf("CRI requests %v, want [%v]: the newest running instance of app", got, want)
			}

			// kubectl exec -i: stdin reaches the command, which ends at EOF.
			stdout, _, err = f.stream(t, websocket, "/exec/default/shell/uid-shell/app"+execQuery(true, false, cmdCat...),
				remotecommand.StreamOptions{Stdin: strings.NewReader("hello\nworld\n"), Stdout: io.Discard, Stderr: io.Discard})
			if err != nil || stdout != "hello\nworld\n" {
				t.Errorf("exec -i cat: %q, %v; want stdin echoed", stdout, err)
			}
			want = &runtimeapi.ExecRequest{ContainerId: "app-1", Cmd: cmdCat, Stdin: true, Stdout: true, Stderr: true}
			if got := f.rt.takeRequests(); len(got) != 1 || !proto.Equal(got[0], want) {
				t.Errorf("CRI requests %v, want [%v]", got, want)
			}
		})
	}
}

// TestAttach: the runtime is asked for the TTY of the container's spec;
// with a TTY, stderr is not asked for (NewOptions drops it).
func TestAttach(t *testing.T) {
	f := newStreamingFixture(t)
	stdout, _, err := f.stream(t, false, "/attach/default/shell/term?output=1&error=1&tty=1",
		remotecommand.StreamOptions{Stdout: io.Discard, Tty: true})
	if err != nil || stdout != "attached to term-1, tty true\n" {
		t.Errorf("attach: %q, %v", stdout, err)
	}
	want := &runtimeapi.AttachRequest{ContainerId: "term-1", Tty: true, Stdout: true}
	if got := f.rt.takeRequests(); len(got) != 1 || !proto.Equal(got[0], want) {
		t.Errorf("CRI requests %v, want [%v]", got, want)
	}
}

// TestPortForward: bytes sent to a forwarded local port come back from the
// pod's port (an echo), over SPDY and over SPDY tunnelled in a WebSocket
// (today's kubectl), and the runtime was asked for the pod's ready sandbox.
func TestPortForward(t *testing.T) {
	f := newStreamingFixture(t)
	u, err := url.Parse(f.node.URL + "/portForward/default/shell")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc   string
		dialer func(t *testing.T) httpstream.Dialer
	}{
		{desc: "SPDY", dialer: func(t *testing.T) httpstream.Dialer {
			transport, upgrader, err := clientspdy.RoundTripperFor(f.config)
			if err != nil {
				t.Fatal(err)
			}
			return clientspdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		}},
		{desc: "SPDY over WebSocket", dialer: func(t *testing.T) httpstream.Dialer {
			d, err := portforward.NewSPDYOverWebsocketDialer(u, f.config)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, stop := context.WithCancel(t.Context())
			ready := make(chan struct{})
			fw, err := portforward.NewOnAddressesWithContext(ctx, tc.dialer(t), []string{"127.0.0.1"}, []string{"0:8080"}, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- fw.ForwardPorts() }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("ForwardPorts: %v", err)
				}
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("port-forward ended before it was ready: %v", err)
			}
			ports, err := fw.GetPorts()
			if err != nil || len(ports) != 1 {
				t.Fatalf("ports %v, %v", ports, err)
			}
			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 5)
			if _, err := io.ReadFull(conn, got); err != nil || string(got) != "ping\n" {
				t.Fatalf("through the forwarded port: %q, %v; want the echo", got, err)
			}
			want := &runtimeapi.PortForwardRequest{PodSandboxId: "sb-shell"}
			if got := f.rt.takeRequests(); len(got) != 1 || !proto.Equal(got[0], want) {
				t.Errorf("CRI requests %v, want [%v]", got, want)
			}
		})
	}
}

// TestStreamingErrors: what is refused before any stream starts, with the
// kubelet's statuses.
func TestStreamingErrors(t *testing.T) {
	f := newStreamingFixture(t)
	refusing := newStreamingFixture(t)
	refusing.rt.streamErr = status.Error(codes.NotFound, "container is gone")
	down := newStreamingFixture(t)
	down.rt.streamErr = status.Error(codes.Unavailable, "runtime down")
	out := execQuery(false, false, "true")
	wsHeaders := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}
	for _, tc := range []struct {
		desc     string
		f        *streamingFixture
		method   string
		path     string
		header   http.Header
		want     int
		wantBody string
		wantCRI  bool // the runtime was asked for a URL
	}{
		{desc: "unknown pod: 404", path: "/exec/default/nope/app" + out, want: 404, wantBody: "pod does not exist"},
		{desc: "pod of another namespace: 404", path: "/exec/other/shell/app" + out, want: 404},
		{desc: "another UID: 404", path: "/exec/default/shell/uid-other/app" + out, want: 404, wantBody: "not found"},
		{desc: "container not in the spec: 404", path: "/exec/default/shell/nope" + out, want: 404, wantBody: `container "nope" not found in pod "shell"`},
		{desc: "container not running: 404", path: "/exec/default/shell/idle" + out, want: 404, wantBody: `container not found ("idle")`},
		{desc: "attach to an unknown container: 404", path: "/attach/default/shell/nope" + out, want: 404},
		{desc: "no stream asked for: 400", path: "/exec/default/shell/app?command=true", want: 400, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{desc: "attach with no stream: 400", method: http.MethodPost, path: "/attach/default/shell/term", want: 400},
		{desc: "no upgrade: 400", path: "/exec/default/shell/app" + out, want: 400, wantBody: "Upgrade request required", wantCRI: true},
		{desc: "the runtime does not know the container: its NotFound is 404", f: refusing, path: "/exec/default/shell/app" + out, want: 404, wantBody: "container is gone", wantCRI: true},
		{desc: "the runtime fails: 500", f: down, path: "/attach/default/shell/app" + out, want: 500, wantBody: "runtime down", wantCRI: true},
		{desc: "port-forward to an unknown pod: 404", path: "/portForward/default/nope", want: 404, wantBody: "pod does not exist"},
		{desc: "port-forward to another UID: 404", path: "/portForward/default/shell/uid-other", want: 404, wantBody: "pod not found"},
		{desc: "port-forward over WebSocket without a port: 400", path: "/portForward/default/shell", header: wsHeaders, want: 400, wantBody: `query parameter "port" is required`},
		{desc: "port-forward over WebSocket, a bad port: 400", path: "/portForward/default/shell?port=http", header: wsHeaders, want: 400, wantBody: "unable to parse"},
		{desc: "port-forward, no upgrade: 400", method: http.MethodPost, path: "/portForward/default/shell", want: 400, wantBody: "Upgrade request required", wantCRI: true},
		{desc: "PUT is not a streaming method: 405", method: http.MethodPut, path: "/exec/default/shell/app" + out, want: 405},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			fx := tc.f
			if fx == nil {
				fx = f
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequestWithContext(t.Context(), method, fx.node.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			req.Header.Set("Authorization", "Bearer admin")
			resp, err := fx.node.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("%s %s: %d %q, want %d with %q", method, tc.path, resp.StatusCode, body, tc.want, tc.wantBody)
			}
			if got := fx.rt.takeRequests(); (len(got) > 0) != tc.wantCRI {
				t.Errorf("CRI requests %v; want some: %v", got, tc.wantCRI)
			}
		})
	}
}
