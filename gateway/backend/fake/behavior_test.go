package fake

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseBehavior(t *testing.T) {
	tests := []struct {
		desc    string
		in      string
		want    behavior
		wantErr string // the token the error must name
	}{
		{desc: "empty runs until stopped", in: "", want: behavior{}},
		{desc: "exit and after", in: "exit=3 after=50ms", want: behavior{exitCode: 3, exitSet: true, after: 50 * time.Millisecond}},
		{desc: "crash", in: "crash", want: behavior{crash: true}},
		{desc: "oom after", in: "oom after=1s", want: behavior{oom: true, after: time.Second}},
		{desc: "quoted stdout with spaces", in: `stdout="line one|line two" exit=0`, want: behavior{stdout: []string{"line one", "line two"}, exitSet: true}},
		{desc: "exec-fail count", in: "exec-fail=2", want: behavior{execFail: 2}},
		{desc: "exec-fail always", in: "exec-fail=always", want: behavior{execFail: execFailAlways}},
		{desc: "flags", in: "  ignore-sigterm\tstart-fail ", want: behavior{ignoreSigterm: true, startFail: true}},
		{desc: "unknown token", in: "exit=1 explode", wantErr: `"explode"`},
		{desc: "exit not a number", in: "exit=x", wantErr: `"exit=x"`},
		{desc: "exit out of range", in: "exit=300", wantErr: `"exit=300"`},
		{desc: "after bad duration", in: "after=5", wantErr: `"after=5"`},
		{desc: "after negative", in: "after=-1s", wantErr: `"after=-1s"`},
		{desc: "exec-fail bad", in: "exec-fail=sometimes", wantErr: `"exec-fail=sometimes"`},
		{desc: "flag with value", in: "crash=1", wantErr: `"crash=1"`},
		{desc: "unterminated quote", in: `stdout="oops`, wantErr: "unterminated quote"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseBehavior(tc.in)
			if tc.wantErr != "" {
				if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseBehavior(%q) err = %v, want InvalidArgument naming %s", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseBehavior(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestBehaviorSourceOrder(t *testing.T) {
	withEnv := func(cfg *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
		cfg.Envs = []*runtimeapi.KeyValue{{Key: BehaviorEnv, Value: []byte("exit=3")}}
		return cfg
	}
	pod := sandboxConfig("p")
	pod.Annotations = map[string]string{BehaviorPodAnnotationPrefix + "c": "exit=2"}
	tests := []struct {
		desc string
		cfg  *runtimeapi.ContainerConfig
		sb   *runtimeapi.PodSandboxConfig
		want string
	}{
		{desc: "container annotation wins", cfg: withEnv(containerConfig("c", map[string]string{BehaviorAnnotation: "exit=1"})), sb: pod, want: "exit=1"},
		{desc: "pod annotation for the container next", cfg: withEnv(containerConfig("c", nil)), sb: pod, want: "exit=2"},
		{desc: "pod annotation for another container ignored", cfg: withEnv(containerConfig("other", nil)), sb: pod, want: "exit=3"},
		{desc: "env last", cfg: withEnv(containerConfig("c", nil)), sb: sandboxConfig("p"), want: "exit=3"},
		{desc: "none", cfg: containerConfig("c", nil), sb: sandboxConfig("p"), want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got, _ := behaviorSource(tc.cfg, tc.sb); got != tc.want {
				t.Fatalf("behaviorSource = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScriptedExit(t *testing.T) {
	tests := []struct {
		desc       string
		behavior   string
		wantCode   int32
		wantReason string
	}{
		{desc: "after with exit code", behavior: "after=50ms exit=3", wantCode: 3, wantReason: "Error"},
		{desc: "after with success", behavior: "after=50ms", wantCode: 0, wantReason: "Completed"},
		{desc: "oom after", behavior: "oom after=50ms", wantCode: 137, wantReason: "OOMKilled"},
		{desc: "crash", behavior: "crash", wantCode: 1, wantReason: "Error"},
		{desc: "crash with code", behavior: "crash exit=7", wantCode: 7, wantReason: "Error"},
		{desc: "oom at once", behavior: "oom", wantCode: 137, wantReason: "OOMKilled"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			_, id := runContainer(t, r, "p", tc.behavior)
			st := waitState(t, r, id, runtimeapi.ContainerState_CONTAINER_EXITED)
			if st.ExitCode != tc.wantCode || st.Reason != tc.wantReason {
				t.Fatalf("exit %d reason %q, want %d %q", st.ExitCode, st.Reason, tc.wantCode, tc.wantReason)
			}
			if st.StartedAt == 0 || st.FinishedAt < st.StartedAt {
				t.Fatalf("started_at %d finished_at %d", st.StartedAt, st.FinishedAt)
			}
			if r.st.containers[id].timer != nil {
				t.Fatal("timer still armed after exit")
			}
		})
	}
}

func TestStartFail(t *testing.T) {
	r := newTestRuntime(t, Options{})
	sbCfg := sandboxConfig("p")
	sb := runSandbox(t, r, sbCfg)
	id := createContainer(t, r, sb, sbCfg, containerConfig("c", map[string]string{BehaviorAnnotation: "start-fail"}))
	_, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id})
	if err == nil {
		t.Fatal("StartContainer succeeded for start-fail")
	}
	st := containerStatus(t, r, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128 || st.Reason != "StartError" || st.Message == "" {
		t.Fatalf("after start failure: %s code %d reason %q message %q", st.State, st.ExitCode, st.Reason, st.Message)
	}
}

func TestStopGracePeriod(t *testing.T) {
	const unit = 20 * time.Millisecond
	tests := []struct {
		desc     string
		behavior string
		timeout  int64
		wantCode int32
		minWait  time.Duration
	}{
		{desc: "SIGTERM ends it at once", behavior: "", timeout: 30, wantCode: 143},
		{desc: "timeout 0 is SIGKILL", behavior: "ignore-sigterm", timeout: 0, wantCode: 137},
		{desc: "ignore-sigterm waits the grace period then kills", behavior: "ignore-sigterm", timeout: 5, wantCode: 137, minWait: 5 * unit},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{TimeoutUnit: unit})
			_, id := runContainer(t, r, "p", tc.behavior)
			start := time.Now()
			if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: tc.timeout}); err != nil {
				t.Fatal(err)
			}
			if waited := time.Since(start); waited < tc.minWait {
				t.Fatalf("stop returned after %v, before the %v grace period", waited, tc.minWait)
			}
			st := containerStatus(t, r, id)
			if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != tc.wantCode || st.Reason != "Error" {
				t.Fatalf("%s code %d reason %q, want EXITED %d Error", st.State, st.ExitCode, st.Reason, tc.wantCode)
			}
		})
	}
}

func TestStopDuringGraceEndsWhenContainerExits(t *testing.T) {
	// The container exits on its own (after=) while a stop waits out a long
	// grace period: the stop returns then, with the container's own exit.
	r := newTestRuntime(t, Options{TimeoutUnit: time.Second})
	_, id := runContainer(t, r, "p", "ignore-sigterm after=50ms exit=4")
	done := make(chan error, 1)
	go func() {
		_, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 60})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stop still waiting after the container exited")
	}
	if st := containerStatus(t, r, id); st.ExitCode != 4 {
		t.Fatalf("exit code %d, want the container's own 4", st.ExitCode)
	}
}

func TestStopCancelsTimer(t *testing.T) {
	r := newTestRuntime(t, Options{})
	_, id := runContainer(t, r, "p", "after=1h")
	c := r.st.containers[id]
	if c.timer == nil {
		t.Fatal("no timer armed for after=1h")
	}
	if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if c.timer != nil {
		t.Fatal("stop left the exit timer armed")
	}
}
