// Package scenario is the CRI scenario suite shared by splitlet's tests: one
// pod lifecycle, driven through CRI clients and checked against the CRI state
// after every step, so the same code proves the fake backend and a real
// containerd (directly or through the gateway) behave alike.
//
// The scenario: Version and Status; the busybox image present (pulled if
// absent); a host-network pod sandbox run and found READY by status and by
// filtered lists; a busybox container created, started, its stdout line read
// back from the CRI log file; two ExecSync calls; a checkpoint archive written
// (skipped, saying why, on a runtime without CRIU); then the container stopped
// and removed, the sandbox stopped and removed. Usage from a test:
//
//	conn, _ := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
//	scenario.Run(t, scenario.Env{
//		Runtime:      runtimeapi.NewRuntimeServiceClient(conn),
//		Image:        runtimeapi.NewImageServiceClient(conn),
//		BusyboxImage: "docker.io/library/busybox:1.36",
//		LogDir:       t.TempDir(),
//	})
package scenario

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Env is what a run needs from its caller.
type Env struct {
	// Runtime and Image are clients of the CRI endpoint under test.
	Runtime runtimeapi.RuntimeServiceClient
	Image   runtimeapi.ImageServiceClient
	// BusyboxImage is a busybox image reference the runtime has or can pull,
	// e.g. docker.io/library/busybox:1.36.
	BusyboxImage string
	// LogDir is the root under which the pod's log directory is made. The
	// test process reads the container log from there, so it must be on the
	// same machine as the runtime and readable by the test.
	LogDir string
	// CheckpointDir is where the checkpoint archive is written: through a
	// gateway, a directory its policy allows (--allowed-host-path); empty
	// means LogDir.
	CheckpointDir string
	// CgroupParent is the sandbox's cgroup parent; optional (the runtime
	// picks one when empty).
	CgroupParent string
	// RuntimeHandler selects a runtime handler; "" is the runtime's default.
	RuntimeHandler string
	// Timeout bounds each CRI call and the wait for the container's log
	// line; default 30s.
	Timeout time.Duration
}

// FakeBehaviorAnnotation scripts a container of the fake backend, which runs
// no programs: it writes the scripted stdout lines to the CRI log file when
// the container starts. Real runtimes ignore the annotation, which is why the
// suite always sets it and stays the same for every backend.
const FakeBehaviorAnnotation = "fake.splitlet.dev/behavior"

// scenarioLabel marks the pod and container of one run, so list filters can
// find exactly them.
const scenarioLabel = "splitlet.dev/scenario"

// containerName is the name of the scenario's only container; kubelet-style
// log paths are <name>/<restart count>.log under the pod's log directory.
const containerName = "busybox"

// run carries the state of one scenario run from step to step.
type run struct {
	env    Env
	suffix string // random, keeps concurrent or leftover runs apart

	podConfig *runtimeapi.PodSandboxConfig
	podLogDir string
	logLine   string // what the container prints

	sandboxID   string
	containerID string
	startedAt   int64

	containerRemoved bool
	sandboxRemoved   bool
}

// step is one stage of the scenario; it fails t to stop the run.
type step struct {
	name string
	fn   func(r *run, t *testing.T)
}

// steps in order; each one needs the state the previous ones left.
var steps = []step{
	{"Version", (*run).version},
	{"Status", (*run).status},
	{"ImagePresent", (*run).imagePresent},
	{"RunPodSandbox", (*run).runPodSandbox},
	{"CreateContainer", (*run).createContainer},
	{"StartContainer", (*run).startContainer},
	{"ReadContainerLog", (*run).readContainerLog},
	{"ExecSync", (*run).execSync},
	{"CheckpointContainer", (*run).checkpointContainer},
	{"StopContainer", (*run).stopContainer},
	{"RemoveContainer", (*run).removeContainer},
	{"StopPodSandbox", (*run).stopPodSandbox},
	{"RemovePodSandbox", (*run).removePodSandbox},
}

// Run runs the scenario, one subtest per step. A failed step ends the run;
// what it created is removed by a cleanup either way.
func Run(t *testing.T, env Env) {
	t.Helper()
	if env.Runtime == nil || env.Image == nil {
		t.Fatal("scenario: Env.Runtime and Env.Image are required")
	}
	if env.BusyboxImage == "" || env.LogDir == "" {
		t.Fatal("scenario: Env.BusyboxImage and Env.LogDir are required")
	}
	if env.Timeout <= 0 {
		env.Timeout = 30 * time.Second
	}
	r := &run{env: env, suffix: randomSuffix(t)}
	r.logLine = "splitlet-scenario-" + r.suffix
	t.Cleanup(func() { r.cleanup(t) })

	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.fn(r, t) }) {
			t.Fatalf("scenario stopped: step %s failed", s.name)
		}
	}
}

// ctx returns a context for one CRI call or wait.
func (r *run) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), r.env.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// waitUntil checks cond every pollInterval until it holds, and fails the
// test with cond's last description when it still does not after the run's
// timeout.
func (r *run) waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(r.env.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %v: %s", what, r.env.Timeout, last)
		}
	}
}

// pollInterval is how often waitUntil checks its condition.
const pollInterval = 20 * time.Millisecond

// cleanup removes what a failed run left behind. Both removals are forced and
// idempotent in CRI, so it does not care how far the run got.
func (r *run) cleanup(t *testing.T) {
	// t.Context is already cancelled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), r.env.Timeout)
	defer cancel()
	if r.containerID != "" && !r.containerRemoved {
		if _, err := r.env.Runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: r.containerID}); err != nil {
			t.Logf("cleanup: remove container %s: %v", r.containerID, err)
		}
	}
	if r.sandboxID != "" && !r.sandboxRemoved {
		if _, err := r.env.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: r.sandboxID}); err != nil {
			t.Logf("cleanup: stop sandbox %s: %v", r.sandboxID, err)
		}
		if _, err := r.env.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: r.sandboxID}); err != nil {
			t.Logf("cleanup: remove sandbox %s: %v", r.sandboxID, err)
		}
	}
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random suffix: %v", err)
	}
	return hex.EncodeToString(b)
}

// containerLogPath is where the runtime writes the container's log: the
// sandbox's log_directory joined with the container's log_path, as
// containerd's CreateContainer computes it.
func (r *run) containerLogPath() string {
	return filepath.Join(r.podLogDir, containerLogRelPath())
}

// containerLogRelPath is the container config's log_path, kubelet style
// (BuildContainerLogsDirectory: <container name>/<restart count>.log).
func containerLogRelPath() string {
	return fmt.Sprintf("%s/%d.log", containerName, 0)
}
