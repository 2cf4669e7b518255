package fake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamTimeout bounds every client session, so a hung stream fails the
// test instead of hanging it. Tests that wait for a session to end wait
// half as long, so that the client giving up is not taken for the end.
const streamTimeout = 10 * time.Second

// clientCtx is the context of the test's client sessions.
// startShell opens an interactive shell at an Exec URL, waits until it
// answers, and returns the channel its stream's end arrives on.
func startShell(t *testing.T, rawURL string) <-chan error {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	t.Cleanup(func() { stdinW.Close() })
	var stdout, stderr safeBuffer
	done, ctx := make(chan error, 1), clientCtx(t)
	go func() {
		done <- stream(ctx, t, rawURL, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout, Stderr: &stderr})
	}()
	if _, err := io.WriteString(stdinW, "echo ready\n"); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return stdout.String() == "ready\n" }) {
		t.Fatalf("shell printed %q", stdout.String())
	}
	return done
}

func clientCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	t.Cleanup(cancel)
	return ctx
}

// safeBuffer is a bytes.Buffer the client's copy goroutines can write while
// the test reads it.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// streamOpts are the client's streams for a session. As the streaming
// server expects, the client opens exactly the streams the CRI request
// asked for.
func streamOpts(stdin io.Reader, wantStdin, tty, wantStderr bool, stdout, stderr io.Writer) remotecommand.StreamOptions {
	opts := remotecommand.StreamOptions{Stdout: stdout, Tty: tty}
	if wantStdin {
		opts.Stdin = stdin
	}
	if wantStderr {
		opts.Stderr = stderr
	}
	return opts
}

// stream connects to a streaming URL as kubectl does, over SPDY.
func stream(ctx context.Context, t *testing.T, rawURL string, opts remotecommand.StreamOptions) error {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("streaming URL %q: %v", rawURL, err)
	}
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	if err != nil {
		t.Fatalf("NewSPDYExecutor: %v", err)
	}
	return ex.StreamWithContext(ctx, opts)
}

// exitStatus returns the exit code a client error carries, or -1.
func exitStatus(err error) int {
	var ee interface{ ExitStatus() int }
	if errors.As(err, &ee) {
		return ee.ExitStatus()
	}
	return -1
}

func TestExecStream(t *testing.T) {
	r := newTestRuntime(t, Options{})
	_, id := runContainer(t, r, "p", "")
	tests := []struct {
		desc       string
		cmd        []string
		stdin      *string // nil: no stdin stream
		tty        bool
		wantStdout string
		wantStderr string
		wantCode   int // 0: the session succeeds
	}{
		{desc: "echo", cmd: []string{"echo", "hi"}, wantStdout: "hi\n"},
		{desc: "sh -c exit", cmd: []string{"sh", "-c", "exit 3"}, wantCode: 3},
		{desc: "stderr and exit code", cmd: []string{"cat", "/etc/x"}, wantStderr: "cat: can't open '/etc/x': No such file or directory\n", wantCode: 1},
		{desc: "sh without stdin runs nothing", cmd: []string{"sh"}},
		{desc: "interactive sh exits with exit's code", cmd: []string{"sh"}, stdin: ptr("echo a\nexit 4\necho never\n"), wantStdout: "a\n", wantCode: 4},
		{desc: "interactive sh at end of stdin: last status", cmd: []string{"/bin/bash"}, stdin: ptr("echo a 'b c'\ncat /f"), wantStdout: "a b c\n", wantStderr: "cat: can't open '/f': No such file or directory\n", wantCode: 1},
		{desc: "interactive sh: bare exit keeps the status", cmd: []string{"ash", "-i"}, stdin: ptr("false\nexit\n"), wantCode: 1},
		{desc: "interactive sh: syntax error", cmd: []string{"sh"}, stdin: ptr("echo 'a\ntrue\n"), wantStderr: "sh: syntax error: unterminated quoted string\n"},
		{desc: "sh -c with stdin is not interactive", cmd: []string{"sh", "-c", "echo x"}, stdin: ptr("exit 9\n"), wantStdout: "x\n"},
		{desc: "cat copies stdin", cmd: []string{"cat"}, stdin: ptr("one\ntwo"), wantStdout: "one\ntwo"},
		{desc: "tty: CRLF", cmd: []string{"echo", "hi"}, tty: true, wantStdout: "hi\r\n"},
		{desc: "tty: stderr on stdout", cmd: []string{"cat", "/f"}, tty: true, wantStdout: "cat: can't open '/f': No such file or directory\r\n", wantCode: 1},
		{
			desc: "tty shell: prompt, echo, CR ends a line, DEL erases, exit",
			cmd:  []string{"sh"}, stdin: ptr("echo a\rechoo\x7f b\nexit 4\n"), tty: true,
			wantStdout: "/ # echo a\r\na\r\n/ # echoo\b \b b\r\nb\r\n/ # exit 4\r\n", wantCode: 4,
		},
		{desc: "tty shell: ^D ends it", cmd: []string{"sh"}, stdin: ptr("true\n\x04echo never\n"), tty: true, wantStdout: "/ # true\r\n/ # "},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			req := &runtimeapi.ExecRequest{ContainerId: id, Cmd: tc.cmd, Tty: tc.tty, Stdin: tc.stdin != nil, Stdout: true, Stderr: !tc.tty}
			resp, err := r.Exec(context.Background(), req)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			var stdin io.Reader
			if tc.stdin != nil {
				stdin = strings.NewReader(*tc.stdin)
			}
			var stdout, stderr safeBuffer
			err = stream(clientCtx(t), t, resp.Url, streamOpts(stdin, req.Stdin, tc.tty, req.Stderr, &stdout, &stderr))
			switch {
			case tc.wantCode == 0 && err != nil:
				t.Fatalf("stream: %v", err)
			case tc.wantCode != 0 && exitStatus(err) != tc.wantCode:
				t.Fatalf("stream error %v (exit status %d), want exit status %d", err, exitStatus(err), tc.wantCode)
			}
			if stdout.String() != tc.wantStdout || stderr.String() != tc.wantStderr {
				t.Fatalf("stdout %q stderr %q, want %q %q", stdout.String(), stderr.String(), tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestStreamingRefusals(t *testing.T) {
	r := newTestRuntime(t, Options{})
	ctx := context.Background()
	sbCfg := sandboxConfig("p")
	sb := runSandbox(t, r, sbCfg)
	created := createContainer(t, r, sb, sbCfg, containerConfig("created", nil))
	_, stopped := runContainer(t, r, "q", "")
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: stopped}); err != nil {
		t.Fatal(err)
	}
	stoppedSb := runSandbox(t, r, sandboxConfig("stopped"))
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: stoppedSb}); err != nil {
		t.Fatal(err)
	}
	exec := func(id string) func() error {
		return func() error {
			_, err := r.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdout: true})
			return err
		}
	}
	attach := func(id string) func() error {
		return func() error {
			_, err := r.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdout: true})
			return err
		}
	}
	portForward := func(id string) func() error {
		return func() error {
			_, err := r.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: id, Port: []int32{80}})
			return err
		}
	}
	tests := []struct {
		desc    string
		call    func() error
		want    func(error) bool
		wantMsg string
	}{
		{desc: "exec in a stopped container", call: exec(stopped), want: errdefs.IsFailedPrecondition, wantMsg: "container is in CONTAINER_EXITED state"},
		{desc: "exec in a created container", call: exec(created), want: errdefs.IsFailedPrecondition, wantMsg: "container is in CONTAINER_CREATED state"},
		{desc: "exec in a missing container", call: exec("missing"), want: errdefs.IsNotFound},
		{desc: "exec without a command", call: func() error {
			_, err := r.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: stopped, Stdout: true})
			return err
		}, want: errdefs.IsInvalidArgument},
		{desc: "attach to a stopped container", call: attach(stopped), want: errdefs.IsFailedPrecondition, wantMsg: "container is in CONTAINER_EXITED state"},
		{desc: "attach to a missing container", call: attach("missing"), want: errdefs.IsNotFound},
		{desc: "port-forward to a stopped sandbox", call: portForward(stoppedSb), want: errdefs.IsFailedPrecondition, wantMsg: "is not running"},
		{desc: "port-forward to a missing sandbox", call: portForward("missing"), want: errdefs.IsNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.call()
			if !tc.want(err) || !strings.Contains(fmt.Sprint(err), tc.wantMsg) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantMsg)
			}
		})
	}
	if r.streaming.server != nil {
		t.Error("refused calls started the streaming server")
	}
}

// TestExecStreamContainerStoppedBeforeConnect: the container is checked
// again when the client connects, as containerd's exec would fail then.
func TestExecStreamContainerStoppedBeforeConnect(t *testing.T) {
	r := newTestRuntime(t, Options{})
	_, id := runContainer(t, r, "p", "")
	resp, err := r.Exec(context.Background(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"echo", "hi"}, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	var stdout safeBuffer
	err = stream(clientCtx(t), t, resp.Url, remotecommand.StreamOptions{Stdout: &stdout})
	if err == nil || exitStatus(err) != -1 || !strings.Contains(err.Error(), "CONTAINER_EXITED") {
		t.Fatalf("stream = %v, want an error naming the container's state", err)
	}
}

// TestExecStreamEndsWithContainer: a shell waiting for input is killed
// with the container, as the kernel kills a PID namespace's processes.
func TestExecStreamEndsWithContainer(t *testing.T) {
	tests := []struct {
		desc string
		end  func(r *Runtime, sb, id string) error
	}{
		{desc: "container stopped", end: func(r *Runtime, _, id string) error {
			_, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10})
			return err
		}},
		{desc: "sandbox removed", end: func(r *Runtime, sb, _ string) error {
			_, err := r.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			sb, id := runContainer(t, r, "p", "")
			resp, err := r.Exec(context.Background(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdin: true, Stdout: true, Stderr: true})
			if err != nil {
				t.Fatal(err)
			}
			done := startShell(t, resp.Url)
			if err := tc.end(r, sb, id); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if exitStatus(err) != 137 {
					t.Fatalf("exec ended with %v, want exit status 137", err)
				}
			case <-time.After(streamTimeout / 2):
				t.Fatal("the shell outlived its container")
			}
		})
	}
}

func TestAttachStream(t *testing.T) {
	tests := []struct {
		desc string
		// end ends the session once it echoed: the client closes stdin, or
		// the container stops or is removed.
		end func(t *testing.T, r *Runtime, sb, id string, stdin io.Closer)
	}{
		{desc: "client closes stdin", end: func(t *testing.T, _ *Runtime, _, _ string, stdin io.Closer) { stdin.Close() }},
		{desc: "container stops", end: func(t *testing.T, r *Runtime, _, id string, _ io.Closer) {
			if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
				t.Error(err)
			}
		}},
		{desc: "sandbox removed", end: func(t *testing.T, r *Runtime, sb, _ string, _ io.Closer) {
			if _, err := r.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
				t.Error(err)
			}
		}},
		{desc: "runtime closes", end: func(t *testing.T, r *Runtime, _, _ string, _ io.Closer) { r.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			sb, id := runContainer(t, r, "p", "")
			resp, err := r.Attach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Stderr: true})
			if err != nil {
				t.Fatal(err)
			}
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			var stdout, stderr safeBuffer
			done, ctx := make(chan error, 1), clientCtx(t)
			go func() {
				done <- stream(ctx, t, resp.Url, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout, Stderr: &stderr})
			}()
			if _, err := io.WriteString(stdinW, "ping\n"); err != nil {
				t.Fatal(err)
			}
			if !waitFor(func() bool { return stdout.String() == "ping\n" }) {
				t.Fatalf("attach echoed %q, want %q", stdout.String(), "ping\n")
			}
			tc.end(t, r, sb, id, stdinW)
			select {
			case err := <-done:
				// Closing the runtime cuts the connection: the client may
				// see that as an error. Every other end is a clean one.
				if err != nil && tc.desc != "runtime closes" {
					t.Fatalf("attach ended with %v", err)
				}
			case <-time.After(streamTimeout / 2):
				t.Fatal("attach session did not end")
			}
		})
	}
}

func TestPortForwardStream(t *testing.T) {
	r := newTestRuntime(t, Options{})
	sb := runSandbox(t, r, sandboxConfig("p"))
	resp, err := r.PortForward(context.Background(), &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{80}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(resp.Url)
	if err != nil {
		t.Fatal(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	var out, errOut safeBuffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:80"}, stop, ready, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	defer func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("ForwardPorts: %v", err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("ForwardPorts ended before ready: %v (%s)", err, errOut.String())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("GetPorts = %v, %v", ports, err)
	}

	// Two connections in turn over the one forwarding session.
	for _, msg := range []string{"hello, echo", strings.Repeat("x", 100_000)} {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.SetDeadline(time.Now().Add(streamTimeout)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(conn, got); err != nil {
			t.Fatalf("reading the echo: %v (forwarder: %s)", err, errOut.String())
		}
		if string(got) != msg {
			t.Fatalf("echo of %d bytes differs", len(msg))
		}
		conn.Close()
	}
}

// TestStreamingURLSingleUse: a URL serves one session, as the kubelet's.
func TestStreamingURLSingleUse(t *testing.T) {
	r := newTestRuntime(t, Options{})
	_, id := runContainer(t, r, "p", "")
	resp, err := r.Exec(context.Background(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"echo", "hi"}, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	var stdout safeBuffer
	if err := stream(clientCtx(t), t, resp.Url, remotecommand.StreamOptions{Stdout: &stdout}); err != nil || stdout.String() != "hi\n" {
		t.Fatalf("first use: %v, stdout %q", err, stdout.String())
	}
	hr, err := http.Post(resp.Url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != http.StatusNotFound {
		t.Fatalf("second use: %s, want 404", hr.Status)
	}
}

// TestCloseStopsStreaming: Close ends live sessions, and URLs handed out
// before it no longer connect.
func TestCloseStopsStreaming(t *testing.T) {
	r := newTestRuntime(t, Options{})
	_, id := runContainer(t, r, "p", "")
	ctx := context.Background()
	req := &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdin: true, Stdout: true, Stderr: true}
	live, err := r.Exec(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	unused, err := r.Exec(ctx, req)
	if err != nil {
		t.Fatal(err)
	}

	done := startShell(t, live.Url)

	r.Close()
	select {
	case <-done: // cut off: an error or not, the session is over
	case <-time.After(streamTimeout / 2):
		t.Fatal("Close left the shell session running")
	}
	if hr, err := http.Post(unused.Url, "", nil); err == nil {
		hr.Body.Close()
		t.Fatalf("a URL from before Close still connects: %s", hr.Status)
	}
	if _, err := r.Exec(ctx, req); !errdefs.IsUnavailable(err) {
		t.Fatalf("Exec after Close: %v, want Unavailable", err)
	}
}

func TestStreamingListenError(t *testing.T) {
	r := newTestRuntime(t, Options{StreamingAddr: "no-such-host.invalid:x"})
	_, id := runContainer(t, r, "p", "")
	_, err := r.Exec(context.Background(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true})
	if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), "streaming server") {
		t.Fatalf("Exec with a bad streaming address: %v", err)
	}
}
