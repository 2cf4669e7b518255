package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
)

// handlerRecorder records the runtime handler of each RunPodSandbox.
type handlerRecorder struct {
	*mutationRecorder
	handlers []string
}

func (f *handlerRecorder) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	f.handlers = append(f.handlers, req.GetRuntimeHandler())
	return f.mutationRecorder.RunPodSandbox(ctx, req, opts...)
}

// classes is a RuntimeClasses over a map of class name to handler.
type classes map[string]string

func (c classes) LookupRuntimeHandler(_ context.Context, name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	h, ok := c[*name]
	if !ok {
		return "", classNotFound(*name)
	}
	return h, nil
}

// classNotFound reads as the API server's NotFound and matches
// errdefs.ErrNotFound, as apiserver.Objects' error does.
type classNotFound string

func (e classNotFound) Error() string {
	return fmt.Sprintf("runtimeclass.node.k8s.io %q not found", string(e))
}
func (e classNotFound) Is(target error) bool { return target == errdefs.ErrNotFound }

// TestSyncPodRunsTheSandboxWithItsRuntimeClassHandler: the sandbox gets
// the handler of the pod's RuntimeClass, and a class that cannot be read
// fails the sandbox with the kubelet's FailedCreatePodSandBox event rather
// than running the pod under the default handler (createPodSandbox).
func TestSyncPodRunsTheSandboxWithItsRuntimeClassHandler(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		desc        string
		classes     RuntimeClasses
		class       *string
		wantHandler []string // nil: no RunPodSandbox
		wantEvent   string
	}{
		{desc: "no runtimeClassName", classes: classes{"gvisor": "runsc"}, wantHandler: []string{""}},
		{desc: "a class", classes: classes{"gvisor": "runsc"}, class: str("gvisor"), wantHandler: []string{"runsc"}},
		{desc: "a missing class", classes: classes{}, class: str("gvisor"),
			wantEvent: `Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found`},
		{desc: "no API server: the default handler", class: str("gvisor"), wantHandler: []string{""}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := &handlerRecorder{mutationRecorder: &mutationRecorder{}}
			rec := &events.FakeRecorder{}
			dir := t.TempDir()
			m := NewManager(cri, cri, ManagerOptions{
				Sandbox:        SandboxOptions{PodLogsRoot: dir},
				Container:      ContainerOptions{PodLogsRoot: dir},
				Recorder:       rec,
				RuntimeClasses: tc.classes,
			})
			pod := makeTestPod()
			pod.Spec.RuntimeClassName = tc.class
			_, err := m.SyncPod(t.Context(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false)
			if (err != nil) != (tc.wantEvent != "") {
				t.Fatalf("SyncPod: %v", err)
			}
			if fmt.Sprint(cri.handlers) != fmt.Sprint(tc.wantHandler) {
				t.Errorf("RunPodSandbox handlers %q, want %q", cri.handlers, tc.wantHandler)
			}
			if tc.wantEvent == "" {
				return
			}
			if !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("SyncPod error %v does not match not found", err)
			}
			if got := strings.Join(rec.Events(), "\n"); got != tc.wantEvent {
				t.Errorf("events:\n%s\nwant:\n%s", got, tc.wantEvent)
			}
			if calls := cri.calls(); len(calls) != 0 {
				t.Errorf("runtime changed: %v", calls)
			}
		})
	}
}
