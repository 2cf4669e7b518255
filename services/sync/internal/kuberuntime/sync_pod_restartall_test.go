package kuberuntime

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resetRecorder records StopContainer with its timeout and RemoveContainer.
type resetRecorder struct {
	*mutationRecorder
}

func (f *resetRecorder) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	f.record(fmt.Sprintf("StopContainer %s timeout=%d", req.GetContainerId(), req.GetTimeout()))
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *resetRecorder) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error) {
	f.record("RemoveContainer " + req.GetContainerId())
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// TestSyncPodWithRestartAllContainers follows step 3 and 4 of the kubelet's
// TestSyncPodWithRestartAllContainers (v1.36.3): once foo2 exited with the
// code of its RestartAllContainers rule and the pod is marked, SyncPod kills
// the running containers without grace (and without their preStop hooks)
// and removes every container, the one that triggered it last, starting
// nothing; the next sync, unmarked, on an empty runtime, starts the first
// init container again in the same sandbox.
func TestSyncPodWithRestartAllContainers(t *testing.T) {
	cri := &resetRecorder{mutationRecorder: &mutationRecorder{}}
	dir := t.TempDir()
	m := NewManager(cri, cri, ManagerOptions{
		Sandbox:   SandboxOptions{PodLogsRoot: dir},
		Container: ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir},
	})
	pod := makeTestPod()
	pod.Spec.InitContainers = []v1.Container{initContainer("init1")}
	pod.Spec.Containers = pod.Spec.Containers[:2]
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	pod.Spec.Containers[1].RestartPolicy = &containerAlways
	pod.Spec.Containers[1].RestartPolicyRules = []v1.ContainerRestartRule{{
		Action:    v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	ps := makeTestPodStatus(pod)
	setStatuses(ps, exited("init1", 0), exited("foo2", 42))

	res, err := m.SyncPod(context.Background(), pod, ps, &fakeProbes{}, true)
	if err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	want := []string{
		"StopContainer " + cid("foo1").ID + " timeout=2", "RemoveContainer " + cid("foo1").ID,
		"RemoveContainer " + cid("init1").ID,
		"RemoveContainer " + cid("foo2").ID,
	}
	if got := cri.calls(); !slices.Equal(got, want) || !res.Acted || !res.Reset {
		t.Fatalf("reset sync: acted %t reset %t, calls\n%q\nwant\n%q", res.Acted, res.Reset, got, want)
	}

	ps.ContainerStatuses = nil
	before := len(cri.calls())
	if _, err := m.SyncPod(context.Background(), pod, ps, &fakeProbes{}, false); err != nil {
		t.Fatalf("SyncPod after the reset: %v", err)
	}
	want = []string{"CreateContainer init1", "StartContainer new-init1"}
	if got := cri.calls()[before:]; !slices.Equal(got, want) {
		t.Errorf("sync after the reset: calls %q, want %q", got, want)
	}
}
