package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageVolumePod mounts the busybox image as an image volume, whole and
// by subPath, into a busybox container. IfNotPresent: no registry is
// reachable, the image is imported.
const imageVolumePod = `apiVersion: v1
kind: Pod
metadata:
  name: image-volume
  namespace: splitlet-e2e
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  volumes:
  - name: img
    image:
      reference: IMAGE
      pullPolicy: IfNotPresent
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: IfNotPresent
    volumeMounts:
    - name: img
      mountPath: /mnt/img
    - name: img
      mountPath: /mnt/bin
      subPath: bin
    command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"]
`

// TestImageVolumeOnContainerd: an image volume (ImageVolume, GA in v1.36)
// is the image's filesystem, read-only, in the container; a subPath is a
// directory of the image. Needs containerd 2.1 or newer, which mounts
// images (CRI Mount.image); on containerd 1.6 it skips.
func TestImageVolumeOnContainerd(t *testing.T) {
	e := newEnv(t)
	if e.cri == nil {
		t.Skip("SPLITLET_GATEWAY_ENDPOINT not set: cannot ask the runtime whether it mounts images")
	}
	requireImageMounts(t, e)
	e.apply(t, strings.ReplaceAll(imageVolumePod, "IMAGE", e.image))
	e.waitPod(t, "image-volume", 60*time.Second, "Running with app running", func(p *v1.Pod) bool {
		app := status(p, "app")
		return p.Status.Phase == v1.PodRunning && app != nil && app.State.Running != nil
	})

	for _, tc := range []struct {
		desc     string
		command  string
		exitCode int32
	}{
		{desc: "the image's files", command: "test -x /mnt/img/bin/busybox", exitCode: 0},
		{desc: "a subPath of the image", command: "test -x /mnt/bin/busybox && test ! -e /mnt/bin/bin", exitCode: 0},
		{desc: "read-only", command: "touch /mnt/img/written 2>/dev/null", exitCode: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m := e.execSync(t, "image-volume", "app", "sh", "-c", tc.command)
			if got := m.GetExitCode(); got != tc.exitCode {
				t.Errorf("%q exited %d (stderr %q), want %d", tc.command, got, m.GetStderr(), tc.exitCode)
			}
		})
	}

	e.deletePod(t, "image-volume", 60*time.Second)
	// Gone from the runtime too, so the other tests' counts of the
	// namespace's sandboxes do not see it.
	waitFor(t, 30*time.Second, "no sandbox of image-volume in the runtime", func() (bool, string) {
		var left []string
		for _, sb := range e.ourSandboxes(t) {
			if sb.GetMetadata().GetName() == "image-volume" {
				left = append(left, fmt.Sprintf("%s (%s)", sb.GetId()[:12], sb.GetState()))
			}
		}
		return len(left) == 0, strings.Join(left, " ")
	})
}

// requireImageMounts skips the test unless the runtime is containerd 2.1
// or newer (CONTAINERD_VERSION=1.6 in hack/e2e.sh runs containerd 1.6,
// which does not know CRI Mount.image), from its CRI Version.
func requireImageMounts(t *testing.T, e *env) {
	t.Helper()
	v, err := e.cri.Version(context.Background(), &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	name, version := v.GetRuntimeName(), v.GetRuntimeVersion()
	if name != "containerd" {
		t.Skipf("runtime %s %s: image volumes are checked on containerd only", name, version)
	}
	// "v2.4.2", or Debian's "1.6.20~ds1".
	fields := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	major, err1 := strconv.Atoi(fields[0])
	minor := 0
	var err2 error
	if len(fields) > 1 {
		minor, err2 = strconv.Atoi(fields[1])
	}
	if err1 != nil || err2 != nil {
		t.Skipf("containerd version %q not understood: cannot tell whether it mounts images", version)
	}
	if major < 2 || major == 2 && minor < 1 {
		t.Skipf("containerd %s does not mount images (CRI Mount.image, containerd 2.1 or newer): image volumes cannot run on it", version)
	}
	t.Logf("runtime containerd %s mounts images", version)
}
