package scenario

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// checkpointConfigFile is the archive member describing the container, in
// containerd's checkpoint archives and the fake's alike.
const checkpointConfigFile = "config.dump"

// checkpointContainer: the running container is checkpointed to a tar
// archive at the requested location whose config.dump names it, and keeps
// running. A runtime that cannot checkpoint skips the step, saying why:
// containerd before 2.0 answers Unimplemented, containerd 2.x without CRIU
// fails naming criu (its checkCriu), both as a kubelet would see them.
func (r *run) checkpointContainer(t *testing.T) {
	dir := r.env.CheckpointDir
	if dir == "" {
		dir = r.env.LogDir
	}
	loc := filepath.Join(dir, "checkpoint-"+r.suffix+".tar")
	t.Cleanup(func() { _ = os.Remove(loc) })
	_, err := r.env.Runtime.CheckpointContainer(r.ctx(t), &runtimeapi.CheckpointContainerRequest{
		ContainerId: r.containerID, Location: loc, Timeout: 30,
	})
	switch {
	case status.Code(err) == codes.Unimplemented:
		t.Skipf("the runtime does not implement CheckpointContainer: %v", err)
	case err != nil && strings.Contains(err.Error(), "criu"):
		t.Skipf("the runtime cannot checkpoint without CRIU: %v", err)
	case err != nil:
		t.Fatalf("CheckpointContainer: %v", err)
	}
	id, err := checkpointedID(loc)
	if err != nil {
		t.Fatalf("checkpoint archive %s: %v", loc, err)
	}
	if id != r.containerID {
		t.Errorf("checkpoint archive names container %q, want %q", id, r.containerID)
	}
	if st := r.containerStatus(t); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container state after checkpoint = %v, want running", st.GetState())
	}
}

// checkpointedID reads the container ID from the archive's config.dump.
func checkpointedID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", errors.New("no " + checkpointConfigFile)
		}
		if err != nil {
			return "", err
		}
		if filepath.Clean(hdr.Name) != checkpointConfigFile {
			continue
		}
		var cfg struct {
			ID string `json:"id"`
		}
		if err := json.NewDecoder(tr).Decode(&cfg); err != nil {
			return "", err
		}
		return cfg.ID, nil
	}
}
