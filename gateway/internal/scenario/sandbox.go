package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hostNamespaces are the namespace options of a hostNetwork pod as the
// kubelet builds them (kuberuntime's namespacesForPod): the node's network,
// a pod-private IPC, and a PID namespace per container.
func hostNamespaces() *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
}

// runPodSandbox: a host-network sandbox runs and is READY by status, by a
// state filter and by a label filter.
func (r *run) runPodSandbox(t *testing.T) {
	meta := &runtimeapi.PodSandboxMetadata{
		Name:      "scenario-" + r.suffix,
		Uid:       "uid-" + r.suffix,
		Namespace: "splitlet-e2e",
	}
	// The kubelet makes the pod's log directory before RunPodSandbox
	// (kuberuntime's createPodSandbox); runtimes do not.
	r.podLogDir = filepath.Join(r.env.LogDir, meta.Namespace+"_"+meta.Name+"_"+meta.Uid)
	if err := os.MkdirAll(r.podLogDir, 0o755); err != nil {
		t.Fatalf("make pod log directory: %v", err)
	}
	r.podConfig = &runtimeapi.PodSandboxConfig{
		Metadata: meta,
		// Empty: a host-network pod shares the node's UTS namespace, and a
		// runtime refuses to set a hostname there.
		Hostname:     "",
		LogDirectory: r.podLogDir,
		Labels:       map[string]string{scenarioLabel: r.suffix},
		Annotations:  map[string]string{"splitlet.dev/purpose": "cri scenario"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    r.env.CgroupParent,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: hostNamespaces()},
		},
	}
	before := time.Now()
	resp, err := r.env.Runtime.RunPodSandbox(r.ctx(t), &runtimeapi.RunPodSandboxRequest{
		Config:         r.podConfig,
		RuntimeHandler: r.env.RuntimeHandler,
	})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	r.sandboxID = resp.GetPodSandboxId()
	if r.sandboxID == "" {
		t.Fatal("RunPodSandbox returned an empty pod_sandbox_id")
	}
	t.Logf("sandbox %s running (%v)", r.sandboxID, time.Since(before).Round(time.Millisecond))

	st := r.sandboxStatus(t)
	if st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox state = %v, want SANDBOX_READY", st.GetState())
	}
	if st.GetId() != r.sandboxID {
		t.Errorf("status id = %q, want %q", st.GetId(), r.sandboxID)
	}
	if got := st.GetMetadata(); got.GetName() != meta.Name || got.GetUid() != meta.Uid || got.GetNamespace() != meta.Namespace {
		t.Errorf("status metadata = %v, want %v", got, meta)
	}
	if st.GetCreatedAt() <= 0 {
		t.Errorf("sandbox created_at = %d, want > 0", st.GetCreatedAt())
	}
	if got := st.GetLinux().GetNamespaces().GetOptions().GetNetwork(); got != runtimeapi.NamespaceMode_NODE {
		t.Errorf("sandbox network namespace mode = %v, want NODE", got)
	}
	if st.GetLabels()[scenarioLabel] != r.suffix {
		t.Errorf("sandbox labels = %v, want %s=%s", st.GetLabels(), scenarioLabel, r.suffix)
	}

	ready := r.listSandboxes(t, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{scenarioLabel: r.suffix},
	})
	if len(ready) != 1 || ready[0].GetId() != r.sandboxID || ready[0].GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("ListPodSandbox(READY, label) = %v, want just %s READY", ready, r.sandboxID)
	}
	notReady := r.listSandboxes(t, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY},
		LabelSelector: map[string]string{scenarioLabel: r.suffix},
	})
	if len(notReady) != 0 {
		t.Errorf("ListPodSandbox(NOTREADY, label) = %v, want none", notReady)
	}
	byID := r.listSandboxes(t, &runtimeapi.PodSandboxFilter{Id: r.sandboxID})
	if len(byID) != 1 || byID[0].GetId() != r.sandboxID {
		t.Errorf("ListPodSandbox(id) = %v, want just %s", byID, r.sandboxID)
	}
}

// stopPodSandbox: the sandbox is NOTREADY afterwards and still listed.
// PodSandboxStatus says NOTREADY as soon as the stop returns; the list may
// say READY a little longer: containerd 2.x's ListPodSandbox reads a store
// its exit monitor updates after StopPodSandbox has returned (1.6 waited for
// that in StopPodSandbox), as the kubelet's relisting PLEG tolerates.
func (r *run) stopPodSandbox(t *testing.T) {
	if _, err := r.env.Runtime.StopPodSandbox(r.ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: r.sandboxID}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if st := r.sandboxStatus(t); st.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox state after stop = %v, want SANDBOX_NOTREADY", st.GetState())
	}
	r.waitUntil(t, "ListPodSandbox(label) after stop", func() (bool, string) {
		listed := r.listSandboxes(t, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{scenarioLabel: r.suffix}})
		if len(listed) != 1 || listed[0].GetId() != r.sandboxID || listed[0].GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return false, fmt.Sprintf("listed %v, want %s NOTREADY", listed, r.sandboxID)
		}
		return true, ""
	})
	// Stopping again must succeed: the kubelet retries stops freely.
	if _, err := r.env.Runtime.StopPodSandbox(r.ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: r.sandboxID}); err != nil {
		t.Errorf("second StopPodSandbox: %v, want success", err)
	}
}

// removePodSandbox: the sandbox is gone from lists and status.
func (r *run) removePodSandbox(t *testing.T) {
	if _, err := r.env.Runtime.RemovePodSandbox(r.ctx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: r.sandboxID}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	r.sandboxRemoved = true
	if listed := r.listSandboxes(t, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{scenarioLabel: r.suffix}}); len(listed) != 0 {
		t.Errorf("ListPodSandbox(label) after remove = %v, want none", listed)
	}
	_, err := r.env.Runtime.PodSandboxStatus(r.ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: r.sandboxID})
	if status.Code(err) != codes.NotFound {
		t.Errorf("PodSandboxStatus after remove: %v, want code NotFound", err)
	}
}

func (r *run) sandboxStatus(t *testing.T) *runtimeapi.PodSandboxStatus {
	t.Helper()
	resp, err := r.env.Runtime.PodSandboxStatus(r.ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: r.sandboxID})
	if err != nil {
		t.Fatalf("PodSandboxStatus(%s): %v", r.sandboxID, err)
	}
	if resp.GetStatus() == nil {
		t.Fatalf("PodSandboxStatus(%s): no status", r.sandboxID)
	}
	return resp.GetStatus()
}

func (r *run) listSandboxes(t *testing.T, f *runtimeapi.PodSandboxFilter) []*runtimeapi.PodSandbox {
	t.Helper()
	resp, err := r.env.Runtime.ListPodSandbox(r.ctx(t), &runtimeapi.ListPodSandboxRequest{Filter: f})
	if err != nil {
		t.Fatalf("ListPodSandbox(%v): %v", f, err)
	}
	return resp.GetItems()
}
