package scenario

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stopTimeout is the grace period of the scenario's StopContainer. The shell
// is PID 1 of its container and ignores SIGTERM, so on a real runtime the
// stop takes this long and ends with SIGKILL.
const stopTimeout = 2

// createContainer: a busybox container that prints the run's line and
// sleeps is CREATED, with the metadata, labels and log path it was given.
func (r *run) createContainer(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: containerName},
		Image:    &runtimeapi.ImageSpec{Image: r.env.BusyboxImage},
		Command:  []string{"sh", "-c", "echo " + r.logLine + "; sleep 3600"},
		LogPath:  containerLogRelPath(),
		Labels:   map[string]string{scenarioLabel: r.suffix},
		Annotations: map[string]string{
			FakeBehaviorAnnotation: `stdout="` + r.logLine + `"`,
		},
		Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: hostNamespaces()},
		},
	}
	resp, err := r.env.Runtime.CreateContainer(r.ctx(t), &runtimeapi.CreateContainerRequest{
		PodSandboxId:  r.sandboxID,
		Config:        cfg,
		SandboxConfig: r.podConfig,
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	r.containerID = resp.GetContainerId()
	if r.containerID == "" {
		t.Fatal("CreateContainer returned an empty container_id")
	}

	st := r.containerStatus(t)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("container state = %v, want CONTAINER_CREATED", st.GetState())
	}
	if st.GetMetadata().GetName() != containerName {
		t.Errorf("container name = %q, want %q", st.GetMetadata().GetName(), containerName)
	}
	if st.GetCreatedAt() <= 0 || st.GetStartedAt() != 0 || st.GetFinishedAt() != 0 {
		t.Errorf("created container timestamps created=%d started=%d finished=%d, want only created set",
			st.GetCreatedAt(), st.GetStartedAt(), st.GetFinishedAt())
	}
	if st.GetLabels()[scenarioLabel] != r.suffix {
		t.Errorf("container labels = %v, want %s=%s", st.GetLabels(), scenarioLabel, r.suffix)
	}
	if st.GetLogPath() != r.containerLogPath() {
		t.Errorf("container log_path = %q, want %q", st.GetLogPath(), r.containerLogPath())
	}
	if st.GetImage().GetImage() == "" || st.GetImageRef() == "" {
		t.Errorf("container image = %v, image_ref = %q, want both set", st.GetImage(), st.GetImageRef())
	}
	t.Logf("container %s created from %s (%s)", r.containerID, st.GetImage().GetImage(), st.GetImageRef())
}

// startContainer: the container is RUNNING with started_at set, and listed
// as running in its sandbox.
func (r *run) startContainer(t *testing.T) {
	if _, err := r.env.Runtime.StartContainer(r.ctx(t), &runtimeapi.StartContainerRequest{ContainerId: r.containerID}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	st := r.containerStatus(t)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container state = %v (exit %d, %s %s), want CONTAINER_RUNNING",
			st.GetState(), st.GetExitCode(), st.GetReason(), st.GetMessage())
	}
	if st.GetStartedAt() <= 0 || st.GetStartedAt() < st.GetCreatedAt() {
		t.Errorf("started_at = %d (created_at %d), want set and not before creation", st.GetStartedAt(), st.GetCreatedAt())
	}
	if st.GetFinishedAt() != 0 {
		t.Errorf("running container has finished_at = %d", st.GetFinishedAt())
	}
	r.startedAt = st.GetStartedAt()

	running := r.listContainers(t, &runtimeapi.ContainerFilter{
		PodSandboxId: r.sandboxID,
		State:        &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if len(running) != 1 || running[0].GetId() != r.containerID || running[0].GetPodSandboxId() != r.sandboxID {
		t.Errorf("ListContainers(sandbox, RUNNING) = %v, want just %s", running, r.containerID)
	}
	byLabel := r.listContainers(t, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{scenarioLabel: r.suffix}})
	if len(byLabel) != 1 || byLabel[0].GetId() != r.containerID {
		t.Errorf("ListContainers(label) = %v, want just %s", byLabel, r.containerID)
	}
}

// stopContainer: after a stop with a short grace period the container is
// EXITED with a finish time and a non-zero exit code; the code itself
// depends on the runtime (137 when runc had to SIGKILL the shell, 143 when
// SIGTERM ended it), so it is logged.
func (r *run) stopContainer(t *testing.T) {
	before := time.Now()
	_, err := r.env.Runtime.StopContainer(r.ctx(t), &runtimeapi.StopContainerRequest{ContainerId: r.containerID, Timeout: stopTimeout})
	if err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	took := time.Since(before)
	st := r.containerStatus(t)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("container state after stop = %v, want CONTAINER_EXITED", st.GetState())
	}
	if st.GetFinishedAt() <= 0 || st.GetFinishedAt() < r.startedAt {
		t.Errorf("finished_at = %d (started_at %d), want set and not before the start", st.GetFinishedAt(), r.startedAt)
	}
	if st.GetExitCode() == 0 {
		t.Errorf("exit code 0 for a container stopped while sleeping; want the signal's code")
	}
	t.Logf("container stopped in %v: exit code %d, reason %q", took.Round(time.Millisecond), st.GetExitCode(), st.GetReason())

	// A second stop of an exited container is a no-op in CRI.
	if _, err := r.env.Runtime.StopContainer(r.ctx(t), &runtimeapi.StopContainerRequest{ContainerId: r.containerID, Timeout: stopTimeout}); err != nil {
		t.Errorf("second StopContainer: %v, want success", err)
	}
	exited := r.listContainers(t, &runtimeapi.ContainerFilter{
		PodSandboxId: r.sandboxID,
		State:        &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED},
	})
	if len(exited) != 1 || exited[0].GetId() != r.containerID {
		t.Errorf("ListContainers(sandbox, EXITED) = %v, want just %s", exited, r.containerID)
	}
}

// removeContainer: the container is gone from status and lists.
func (r *run) removeContainer(t *testing.T) {
	if _, err := r.env.Runtime.RemoveContainer(r.ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: r.containerID}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	r.containerRemoved = true
	_, err := r.env.Runtime.ContainerStatus(r.ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: r.containerID})
	if status.Code(err) != codes.NotFound {
		t.Errorf("ContainerStatus after remove: %v, want code NotFound", err)
	}
	if left := r.listContainers(t, &runtimeapi.ContainerFilter{PodSandboxId: r.sandboxID}); len(left) != 0 {
		t.Errorf("ListContainers(sandbox) after remove = %v, want none", left)
	}
}

func (r *run) containerStatus(t *testing.T) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := r.env.Runtime.ContainerStatus(r.ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: r.containerID})
	if err != nil {
		t.Fatalf("ContainerStatus(%s): %v", r.containerID, err)
	}
	if resp.GetStatus() == nil {
		t.Fatalf("ContainerStatus(%s): no status", r.containerID)
	}
	return resp.GetStatus()
}

func (r *run) listContainers(t *testing.T, f *runtimeapi.ContainerFilter) []*runtimeapi.Container {
	t.Helper()
	resp, err := r.env.Runtime.ListContainers(r.ctx(t), &runtimeapi.ListContainersRequest{Filter: f})
	if err != nil {
		t.Fatalf("ListContainers(%v): %v", f, err)
	}
	return resp.GetContainers()
}
