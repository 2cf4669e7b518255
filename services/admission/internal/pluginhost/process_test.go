package pluginhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// These tests cross the real go-plugin boundary: child processes built from
// the example plugin and testdata/testplugin, AutoMTLS, handshake and all.

func newRealChain(t *testing.T, cfg *Config, opts Options) *Chain {
	t.Helper()
	c, err := New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func currentPID(t *testing.T, p *hostPlugin) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		t.Fatal("plugin has no running process")
	}
	return p.cur.pid
}

// killAndWait kills the plugin's process from outside, as a crash would, and
// waits until go-plugin has noticed (its exit watcher sets Exited).
func killAndWait(t *testing.T, p *hostPlugin) {
	t.Helper()
	p.mu.Lock()
	inst := p.cur
	p.mu.Unlock()
	if err := syscall.Kill(inst.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill plugin pid %d: %v", inst.pid, err)
	}
	// go-plugin offers no channel for the exit, only Exited: check it on
	// every tick.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !inst.exited() {
		select {
		case <-deadline:
			t.Fatalf("plugin pid %d not seen exiting", inst.pid)
		case <-tick.C:
		}
	}
}

func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestProcessAllowlistAdmitsAndRejects(t *testing.T) {
	allowlist, _ := pluginBinaries(t)
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := writeConfig(t, PluginConfig{
		Name: "image-allowlist", Path: allowlist, SHA256: sha256File(t, allowlist),
		Env: map[string]string{"SPLITLET_IMAGE_ALLOWLIST": "registry.local/,docker.io/library/"},
	})
	c := newRealChain(t, cfg, Options{Logger: zap.New(core)})

	tests := []struct {
		desc          string
		images        []string
		wantAdmit     bool
		wantInMessage []string
	}{
		{desc: "allowed images", images: []string{"registry.local/app:1", "docker.io/library/nginx"}, wantAdmit: true},
		{desc: "one image not allowed", images: []string{"registry.local/app:1", "evil.io/miner"}, wantInMessage: []string{`admission plugin "image-allowlist"`, `"cevil.io/miner"`, `"evil.io/miner"`}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{
				Pod: testPod("p", tc.images...), OtherPods: []*v1.Pod{testPod("other", "registry.local/x")},
			})
			if res.Admit != tc.wantAdmit {
				t.Fatalf("Admit = %+v, want admit=%v", res, tc.wantAdmit)
			}
			if !tc.wantAdmit && res.Reason != "ImageNotAllowed" {
				t.Errorf("reason = %q, want ImageNotAllowed", res.Reason)
			}
			for _, s := range tc.wantInMessage {
				if !strings.Contains(res.Message, s) {
					t.Errorf("message %q does not contain %q", res.Message, s)
				}
			}
		})
	}

	// The plugin described itself, and the start was logged through zap.
	started := logs.FilterMessage("admission plugin started").All()
	if len(started) != 1 || started[0].ContextMap()["pluginName"] != "image-allowlist" {
		t.Errorf("start log entries = %+v, want one naming image-allowlist", started)
	}
}

func TestProcessChecksumMismatchRefused(t *testing.T) {
	allowlist, _ := pluginBinaries(t)
	actual := sha256File(t, allowlist)
	wrong := strings.Repeat("ab", 32)
	cfg := writeConfig(t, PluginConfig{Name: "image-allowlist", Path: allowlist, SHA256: wrong})

	c, err := New(context.Background(), cfg, Options{})
	if err == nil {
		c.Close()
		t.Fatal("New started a plugin whose checksum differs")
	}
	if !errors.Is(err, ErrChecksumMismatch) || !errdefs.IsFailedPrecondition(err) {
		t.Errorf("error %v: want ErrChecksumMismatch and FailedPrecondition", err)
	}
	for _, s := range []string{`"image-allowlist"`, allowlist, "expects " + wrong, "sha256 " + actual} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}

func TestProcessMissingBinaryRefused(t *testing.T) {
	cfg := writeConfig(t, PluginConfig{Name: "ghost", Path: filepath.Join(t.TempDir(), "ghost"), SHA256: sum0})
	if _, err := New(context.Background(), cfg, Options{}); !errdefs.IsNotFound(err) {
		t.Fatalf("New with a missing binary: %v, want NotFound", err)
	}
}

func TestProcessKilledPluginRestarted(t *testing.T) {
	allowlist, _ := pluginBinaries(t)
	cfg := writeConfig(t, PluginConfig{
		Name: "image-allowlist", Path: allowlist, SHA256: sha256File(t, allowlist),
		Env: map[string]string{"SPLITLET_IMAGE_ALLOWLIST": "registry.local/"},
	})
	c := newRealChain(t, cfg, Options{})
	p := c.plugins[0]
	attrs := &lifecycle.PodAdmitAttributes{Pod: testPod("p", "registry.local/app")}
	if res := c.Admit(context.Background(), attrs); !res.Admit {
		t.Fatalf("Admit = %+v", res)
	}
	before := currentPID(t, p)

	killAndWait(t, p)

	if res := c.Admit(context.Background(), attrs); !res.Admit {
		t.Fatalf("Admit after the plugin was killed = %+v, want it restarted and admitting", res)
	}
	after := currentPID(t, p)
	if after == before || !processAlive(after) {
		t.Errorf("plugin pid %d -> %d (alive %v): want a new live process", before, after, processAlive(after))
	}
	// The restarted plugin still applies its configuration.
	if res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("p", "evil.io/x")}); res.Admit {
		t.Error("restarted plugin admitted a pod with a disallowed image")
	}
}

// TestProcessChangedBinaryRefusedOnRestart replaces the binary while the
// plugin runs; the restart after a crash verifies the checksum again.
func TestProcessChangedBinaryRefusedOnRestart(t *testing.T) {
	allowlist, testplugin := pluginBinaries(t)
	path := copyBinary(t, allowlist)
	cfg := writeConfig(t, PluginConfig{
		Name: "image-allowlist", Path: path, SHA256: sha256File(t, path),
		Env: map[string]string{"SPLITLET_IMAGE_ALLOWLIST": "registry.local/"},
	})
	c := newRealChain(t, cfg, Options{})
	attrs := &lifecycle.PodAdmitAttributes{Pod: testPod("p", "registry.local/app")}
	if res := c.Admit(context.Background(), attrs); !res.Admit {
		t.Fatalf("Admit = %+v", res)
	}

	// Rename over the path, as a package upgrade would (writing into a
	// running executable fails with ETXTBSY).
	replacement := copyBinary(t, testplugin)
	if err := os.Rename(replacement, path); err != nil {
		t.Fatal(err)
	}
	killAndWait(t, c.plugins[0])

	res := c.Admit(context.Background(), attrs)
	if res.Admit || res.Reason != ReasonPluginError {
		t.Fatalf("Admit with a changed binary = %+v, want an %s rejection", res, ReasonPluginError)
	}
	for _, s := range []string{"refusing to start a changed binary", path, cfg.Plugins[0].SHA256} {
		if !strings.Contains(res.Message, s) {
			t.Errorf("message %q does not contain %q", res.Message, s)
		}
	}
}

func TestProcessFailurePolicy(t *testing.T) {
	_, testplugin := pluginBinaries(t)
	sum := sha256File(t, testplugin)
	tests := []struct {
		desc   string
		mode   string
		policy FailurePolicy
		// wantAdmit is the decision; a rejection must be AdmissionPluginError.
		wantAdmit     bool
		wantInMessage string
	}{
		{desc: "exits at once, fail-closed", mode: "exit", policy: Fail, wantInMessage: "start " + testplugin},
		{desc: "exits at once, fail-open", mode: "exit", policy: Ignore, wantAdmit: true},
		{desc: "crashes mid-call, fail-closed", mode: "crash", policy: Fail, wantInMessage: "Unavailable"},
		{desc: "crashes mid-call, fail-open", mode: "crash", policy: Ignore, wantAdmit: true},
		{desc: "hangs past its timeout, fail-closed", mode: "hang", policy: Fail, wantInMessage: "DeadlineExceeded"},
		{desc: "hangs past its timeout, fail-open", mode: "hang", policy: Ignore, wantAdmit: true},
		{desc: "healthy plugin's rejection is not a failure", mode: "reject", policy: Ignore, wantInMessage: "rejected by the test plugin"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, PluginConfig{
				Name: "test-" + tc.mode, Path: testplugin, SHA256: sum, FailurePolicy: tc.policy,
				Timeout: Duration(300 * time.Millisecond),
				Env:     map[string]string{"SPLITLET_TESTPLUGIN_MODE": tc.mode},
			})
			c := newRealChain(t, cfg, Options{})
			res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")})
			if res.Admit != tc.wantAdmit {
				t.Fatalf("Admit = %+v, want admit=%v", res, tc.wantAdmit)
			}
			if tc.wantAdmit {
				return
			}
			wantReason := ReasonPluginError
			if tc.mode == "reject" {
				wantReason = "TestRejected"
			}
			if res.Reason != wantReason {
				t.Errorf("reason = %q, want %q", res.Reason, wantReason)
			}
			if !strings.Contains(res.Message, tc.wantInMessage) || !strings.Contains(res.Message, `"test-`+tc.mode+`"`) {
				t.Errorf("message %q should name the plugin and contain %q", res.Message, tc.wantInMessage)
			}
		})
	}
}

// TestProcessCrashLoopBounded admits many pods through a plugin that exits
// at once and checks it was not forked once per admission.
func TestProcessCrashLoopBounded(t *testing.T) {
	_, testplugin := pluginBinaries(t)
	cfg := writeConfig(t, PluginConfig{
		Name: "crashloop", Path: testplugin, SHA256: sha256File(t, testplugin), FailurePolicy: Ignore,
		Env: map[string]string{"SPLITLET_TESTPLUGIN_MODE": "exit"},
	})
	// A back-off far longer than the test, so only the immediate first
	// retry may start a process.
	c := newRealChain(t, cfg, Options{RestartBackoff: time.Hour, MaxRestartBackoff: time.Hour})
	for range 50 {
		if res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")}); !res.Admit {
			t.Fatalf("Admit = %+v, want fail-open admission", res)
		}
	}
	p := c.plugins[0]
	p.mu.Lock()
	starts := p.starts
	p.mu.Unlock()
	if starts != 2 {
		t.Errorf("50 admissions forked the crashing plugin %d times, want 2 (start and one immediate retry)", starts)
	}
}

// TestProcessAutoMTLS checks that the host starts plugins with AutoMTLS:
// the test plugin reports whether it was handed the host's certificate.
func TestProcessAutoMTLS(t *testing.T) {
	_, testplugin := pluginBinaries(t)
	cfg := writeConfig(t, PluginConfig{Name: "mtls", Path: testplugin, SHA256: sha256File(t, testplugin)})
	c := newRealChain(t, cfg, Options{})
	p := c.plugins[0]
	p.mu.Lock()
	info := p.cur.info
	p.mu.Unlock()
	if info.Version != "mtls=true" {
		t.Errorf("plugin reports %q, want mtls=true", info.Version)
	}
	if res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")}); !res.Admit {
		t.Errorf("Admit over mTLS = %+v", res)
	}
}
