package fake

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestExecSync(t *testing.T) {
	r := newTestRuntime(t, Options{})
	_, id := runContainer(t, r, "p", "")
	tests := []struct {
		desc       string
		cmd        []string
		wantOut    string
		wantErrOut string
		wantCode   int32
	}{
		{desc: "echo", cmd: []string{"echo", "hello", "world"}, wantOut: "hello world\n"},
		{desc: "echo by path", cmd: []string{"/bin/echo", "x"}, wantOut: "x\n"},
		{desc: "true", cmd: []string{"true"}},
		{desc: "false", cmd: []string{"false"}, wantCode: 1},
		{desc: "cat missing file", cmd: []string{"cat", "/tmp/healthy"}, wantErrOut: "cat: can't open '/tmp/healthy': No such file or directory\n", wantCode: 1},
		{desc: "sh -c echo", cmd: []string{"sh", "-c", `echo "a  b" c`}, wantOut: "a  b c\n"},
		{desc: "sh -c exit", cmd: []string{"/bin/sh", "-c", "exit 3"}, wantCode: 3},
		{desc: "sh -c cat", cmd: []string{"sh", "-c", "cat /etc/ready"}, wantErrOut: "cat: can't open '/etc/ready': No such file or directory\n", wantCode: 1},
		{desc: "unknown command succeeds silently", cmd: []string{"nginx", "-t"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			resp, err := r.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Stdout) != tc.wantOut || string(resp.Stderr) != tc.wantErrOut || resp.ExitCode != tc.wantCode {
				t.Fatalf("ExecSync(%q) = %q %q %d, want %q %q %d", tc.cmd, resp.Stdout, resp.Stderr, resp.ExitCode, tc.wantOut, tc.wantErrOut, tc.wantCode)
			}
		})
	}
}

func TestExecSyncNotRunning(t *testing.T) {
	r := newTestRuntime(t, Options{})
	sbCfg := sandboxConfig("p")
	sb := runSandbox(t, r, sbCfg)
	id := createContainer(t, r, sb, sbCfg, containerConfig("c", nil))
	_, err := r.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}})
	if !errdefs.IsFailedPrecondition(err) || !strings.Contains(err.Error(), "container is in CONTAINER_CREATED state") {
		t.Fatalf("exec in created container: %v", err)
	}
	_, err = r.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: "missing", Cmd: []string{"true"}})
	if !errdefs.IsNotFound(err) {
		t.Fatalf("exec in missing container: %v", err)
	}
}

func TestExecFail(t *testing.T) {
	tests := []struct {
		desc     string
		behavior string
		want     []int32 // exit codes of successive `true` execs
	}{
		{desc: "first two fail", behavior: "exec-fail=2", want: []int32{1, 1, 0, 0}},
		{desc: "always", behavior: "exec-fail=always", want: []int32{1, 1, 1, 1}},
		{desc: "zero", behavior: "exec-fail=0", want: []int32{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			_, id := runContainer(t, r, "p", tc.behavior)
			for i, want := range tc.want {
				resp, err := r.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}})
				if err != nil {
					t.Fatal(err)
				}
				if resp.ExitCode != want {
					t.Fatalf("exec #%d exit %d, want %d", i, resp.ExitCode, want)
				}
				if want == 1 && string(resp.Stderr) != "probe failed" {
					t.Fatalf("exec #%d stderr %q", i, resp.Stderr)
				}
			}
		})
	}
}

func TestLogFile(t *testing.T) {
	clock := newTestClock()
	r := newTestRuntime(t, Options{Clock: clock.Now})
	ctx := context.Background()
	sbCfg := sandboxConfig("p")
	sbCfg.LogDirectory = filepath.Join(t.TempDir(), "pods", "default_p_uid")
	sb := runSandbox(t, r, sbCfg)
	cfg := containerConfig("c", map[string]string{BehaviorAnnotation: `stdout="hello world|second line"`})
	cfg.LogPath = "c/0.log"
	id := createContainer(t, r, sb, sbCfg, cfg)
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sbCfg.LogDirectory, "c", "0.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := clock.Now().Format("2006-01-02T15:04:05.000000000Z07:00")
	want := ts + " stdout F hello world\n" + ts + " stdout F second line\n"
	if string(b) != want {
		t.Fatalf("log file:\n%q\nwant\n%q", b, want)
	}
	if ts != "2026-01-02T03:04:05.000000006Z" {
		t.Fatalf("timestamp layout %q", ts)
	}

	// Rotation: the kubelet renames the file away and asks for a reopen.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("reopen did not recreate the log: %v", err)
	}
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); !errdefs.IsFailedPrecondition(err) {
		t.Fatalf("reopen of a stopped container: %v", err)
	}
}

func TestLogFileUnwritableFailsStart(t *testing.T) {
	r := newTestRuntime(t, Options{})
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sbCfg := sandboxConfig("p")
	sbCfg.LogDirectory = blocker // a file, so the log's parent cannot be created
	sb := runSandbox(t, r, sbCfg)
	cfg := containerConfig("c", nil)
	cfg.LogPath = "c/0.log"
	id := createContainer(t, r, sb, sbCfg, cfg)
	if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err == nil {
		t.Fatal("start succeeded with an unwritable log path")
	}
	st := containerStatus(t, r, id)
	if st.Reason != "StartError" || st.ExitCode != 128 {
		t.Fatalf("reason %q code %d", st.Reason, st.ExitCode)
	}
}
