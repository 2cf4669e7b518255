package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The CRI mount's recursive_read_only as the kubelet's makeMounts sets it
// (resolveRecursiveReadOnly): IfPossible follows the handler's support,
// Enabled needs it, and Disabled or unset never asks for it.
func TestMakeMountsRecursiveReadOnly(t *testing.T) {
	mode := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
	for _, tc := range []struct {
		desc      string
		mode      *v1.RecursiveReadOnlyMode
		supported bool
		want      bool
		wantErr   string
	}{
		{desc: "unset", supported: true},
		{desc: "Disabled", mode: mode(v1.RecursiveReadOnlyDisabled), supported: true},
		{desc: "IfPossible, supported", mode: mode(v1.RecursiveReadOnlyIfPossible), supported: true, want: true},
		{desc: "IfPossible, unsupported", mode: mode(v1.RecursiveReadOnlyIfPossible)},
		{desc: "Enabled, supported", mode: mode(v1.RecursiveReadOnlyEnabled), supported: true, want: true},
		{desc: "Enabled, unsupported", mode: mode(v1.RecursiveReadOnlyEnabled),
			wantErr: `spec.containers[0].volumeMounts[0].recursiveReadOnly: volume "h" requested recursive read-only mode, but it is not supported by the runtime`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt"}}}}
			c := &pod.Spec.Containers[0]
			c.VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/mnt", ReadOnly: true, RecursiveReadOnly: tc.mode}}
			opts := containerOpts(newFakeFS())
			opts.SupportsRecursiveReadOnly = tc.supported
			mounts, err := makeMounts(t.Context(), pod, c, nil, false, opts)
			if tc.wantErr != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(fmt.Sprint(err), tc.wantErr) {
					t.Fatalf("err = %v, want invalid argument %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(mounts) != 1 || !mounts[0].GetReadonly() || mounts[0].GetRecursiveReadOnly() != tc.want {
				t.Errorf("mounts %v, want one read-only mount with recursive_read_only %t", mounts, tc.want)
			}
		})
	}
}

// statusHandlers answers Status with the given runtime handlers and counts
// the calls.
type statusHandlers struct {
	*mutationRecorder
	handlers []*runtimeapi.RuntimeHandler
	calls    atomic.Int32
}

func (f *statusHandlers) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	f.calls.Add(1)
	return &runtimeapi.StatusResponse{RuntimeHandlers: f.handlers}, nil
}

// SupportsRecursiveReadOnlyMounts reads the support of the pod's handler
// (through its RuntimeClass) from the runtime's Status, asked again only
// after runtimeHandlersTTL; a runtime with no handlers, an unknown handler
// and a missing class say no, as the kubelet's
// runtimeClassSupportsRecursiveReadOnlyMounts does.
func TestSupportsRecursiveReadOnlyMounts(t *testing.T) {
	str := func(s string) *string { return &s }
	handlers := []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
		{Name: "kata", Features: &runtimeapi.RuntimeHandlerFeatures{}},
	}
	for _, tc := range []struct {
		desc     string
		handlers []*runtimeapi.RuntimeHandler
		classes  RuntimeClasses
		class    *string
		want     bool
		// noStatus: the answer comes before the runtime is asked.
		noStatus bool
	}{
		{desc: "the default handler", handlers: handlers, classes: classes{}, want: true},
		{desc: "a class of a supporting handler", handlers: handlers, classes: classes{"c": "runc"}, class: str("c"), want: true},
		{desc: "a class of a handler without support", handlers: handlers, classes: classes{"c": "kata"}, class: str("c")},
		{desc: "a class of an unknown handler", handlers: handlers, classes: classes{"c": "gvisor"}, class: str("c")},
		{desc: "a missing class", handlers: handlers, classes: classes{}, class: str("c"), noStatus: true},
		{desc: "no handlers reported (containerd 1.6)", classes: classes{}},
		{desc: "no API server: the default handler", handlers: handlers, class: str("c"), want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := &statusHandlers{mutationRecorder: &mutationRecorder{}, handlers: tc.handlers}
			m := NewManager(cri, cri, ManagerOptions{RuntimeClasses: tc.classes})
			pod := makeTestPod()
			pod.Spec.RuntimeClassName = tc.class
			for range 3 {
				if got := m.SupportsRecursiveReadOnlyMounts(t.Context(), pod); got != tc.want {
					t.Fatalf("got %t, want %t", got, tc.want)
				}
			}
			if n := cri.calls.Load(); n != 1 && !tc.noStatus || n != 0 && tc.noStatus {
				t.Errorf("Status called %d times for three answers within the TTL, want once (none when the class is missing)", n)
			}
		})
	}
}
