package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// rroPod mounts one host directory, which has a tmpfs mounted below it,
// three times read-only: plainly, recursively read-only (Enabled), and
// IfPossible.
const rroPod = `apiVersion: v1
kind: Pod
metadata:
  name: rro
  namespace: splitlet-e2e
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  volumes:
  - name: host
    hostPath:
      path: HOSTDIR
      type: Directory
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: IfNotPresent
    volumeMounts:
    - name: host
      mountPath: /ro
      readOnly: true
    - name: host
      mountPath: /rro
      readOnly: true
      recursiveReadOnly: Enabled
    - name: host
      mountPath: /if-possible
      readOnly: true
      recursiveReadOnly: IfPossible
    command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"]
`

// TestRecursiveReadOnlyOnContainerd (RecursiveReadOnlyMounts, GA): where
// the runtime's default handler reports recursive read-only mounts
// (containerd 2.x with runc 1.1 on Linux 5.12 or newer), a read-only mount
// asking for them is read-only below its submounts too, while a plain
// read-only mount's submount stays writable, and the container statuses
// say which is which. Where it does not (containerd 1.6 reports no
// handlers), the container asking for Enabled is refused with the
// kubelet's CreateContainerConfigError message. Needs root, to mount the
// tmpfs.
func TestRecursiveReadOnlyOnContainerd(t *testing.T) {
	e := newEnv(t)
	if e.cri == nil {
		t.Skip("SPLITLET_GATEWAY_ENDPOINT not set: cannot ask the runtime whether it supports recursive read-only mounts")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs below the host directory")
	}
	st, err := e.cri.Status(context.Background(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	supported := false
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			supported = h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}

	// Under the prefix main_test.go's gateway policy allows for host paths.
	if err := os.MkdirAll(allowedHostPath, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(allowedHostPath, "rro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		_ = os.Remove(allowedHostPath) // only if the test made it
	})
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sub, unix.MNT_DETACH) })

	e.apply(t, strings.NewReplacer("HOSTDIR", dir, "IMAGE", e.image).Replace(rroPod))
	if !supported {
		pod := e.waitPod(t, "rro", 60*time.Second, "app waiting with CreateContainerConfigError", func(p *v1.Pod) bool {
			app := status(p, "app")
			return app != nil && app.State.Waiting != nil && app.State.Waiting.Reason == "CreateContainerConfigError"
		})
		want := `volume "host" requested recursive read-only mode, but it is not supported by the runtime`
		if msg := status(pod, "app").State.Waiting.Message; !strings.Contains(msg, want) {
			t.Errorf("waiting message %q, want it to contain %q", msg, want)
		}
		return
	}

	pod := e.waitPod(t, "rro", 60*time.Second, "Running with app running", func(p *v1.Pod) bool {
		app := status(p, "app")
		return p.Status.Phase == v1.PodRunning && app != nil && app.State.Running != nil
	})
	got := map[string]string{}
	for _, m := range status(pod, "app").VolumeMounts {
		got[m.MountPath] = "-"
		if m.RecursiveReadOnly != nil {
			got[m.MountPath] = string(*m.RecursiveReadOnly)
		}
	}
	for path, want := range map[string]string{"/ro": "Disabled", "/rro": "Enabled", "/if-possible": "Enabled"} {
		if got[path] != want {
			t.Errorf("status of mount %s: recursiveReadOnly %s, want %s", path, got[path], want)
		}
	}

	for _, tc := range []struct {
		desc, command string
		exitCode      int32
	}{
		{desc: "read-only mount", command: "touch /ro/x", exitCode: 1},
		{desc: "its submount stays writable", command: "touch /ro/sub/x", exitCode: 0},
		{desc: "recursively read-only mount", command: "touch /rro/y", exitCode: 1},
		{desc: "its submount read-only too", command: "touch /rro/sub/y", exitCode: 1},
		{desc: "IfPossible's submount read-only too", command: "touch /if-possible/sub/z", exitCode: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := e.execSync(t, "rro", "app", "sh", "-c", tc.command+" 2>/dev/null").GetExitCode(); got != tc.exitCode {
				t.Errorf("%q exited %d, want %d", tc.command, got, tc.exitCode)
			}
		})
	}
	e.deletePod(t, "rro", 60*time.Second)
}
