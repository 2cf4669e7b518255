package fake

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// readCheckpoint returns the CheckpointConfigFile of the archive at path.
func readCheckpoint(t *testing.T, path string) CheckpointConfig {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("archive mode %v (%v), want 0600", fi.Mode(), err)
	}
	tr := tar.NewReader(f)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != CheckpointConfigFile {
		t.Fatalf("first member %v (%v), want %s", hdr, err, CheckpointConfigFile)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	var cfg CheckpointConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return cfg
}

func TestCheckpointContainer(t *testing.T) {
	clock := newTestClock()
	r := newTestRuntime(t, Options{Clock: clock.Now})
	_, running := runContainer(t, r, "p", "")
	_, stopped := runContainer(t, r, "q", "")
	if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: stopped}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		desc     string
		req      *runtimeapi.CheckpointContainerRequest
		wantErr  func(error) bool
		wantMsg  string
		wantFile bool
	}{
		{desc: "a running container is written to the location",
			req: &runtimeapi.CheckpointContainerRequest{ContainerId: running, Location: filepath.Join(dir, "a.tar")}, wantFile: true},
		{desc: "a short ID resolves as in other calls",
			req: &runtimeapi.CheckpointContainerRequest{ContainerId: running[:12], Location: filepath.Join(dir, "b.tar"), Timeout: 5}, wantFile: true},
		{desc: "an unknown container is NotFound",
			req:     &runtimeapi.CheckpointContainerRequest{ContainerId: "nope", Location: filepath.Join(dir, "c.tar")},
			wantErr: errdefs.IsNotFound, wantMsg: `an error occurred when trying to find container "nope"`},
		{desc: "a stopped container is refused with containerd's words",
			req:     &runtimeapi.CheckpointContainerRequest{ContainerId: stopped, Location: filepath.Join(dir, "d.tar")},
			wantErr: func(err error) bool { return err != nil && !errdefs.IsNotFound(err) },
			wantMsg: `is in CONTAINER_EXITED state. only CONTAINER_RUNNING containers can be checkpointed`},
		{desc: "no location is InvalidArgument",
			req:     &runtimeapi.CheckpointContainerRequest{ContainerId: running},
			wantErr: errdefs.IsInvalidArgument, wantMsg: "location is required"},
		{desc: "a location in a missing directory fails",
			req:     &runtimeapi.CheckpointContainerRequest{ContainerId: running, Location: filepath.Join(dir, "missing", "e.tar")},
			wantErr: func(err error) bool { return err != nil }, wantMsg: "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := r.CheckpointContainer(context.Background(), tc.req)
			if tc.wantErr != nil {
				if !tc.wantErr(err) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantMsg)
				}
				if _, statErr := os.Stat(tc.req.GetLocation()); tc.req.GetLocation() != "" && statErr == nil {
					t.Errorf("a failed checkpoint left %s", tc.req.GetLocation())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := readCheckpoint(t, tc.req.GetLocation())
			st := containerStatus(t, r, running)
			if got.ID != running || got.Image != st.GetImage().GetImage() || got.ImageRef != st.GetImageRef() || got.State != "CONTAINER_RUNNING" || !got.CheckpointedAt.Equal(clock.Now()) || got.Name == "" {
				t.Errorf("archive says %+v, want the running container %s", got, running)
			}
		})
	}
	// Checkpointing leaves the container running, as CRIU's leave-running
	// dump that containerd asks for.
	if st := containerStatus(t, r, running); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("state after checkpoint %v, want running", st.State)
	}
}

// The request's timeout bounds the call: a runtime that hangs fails with
// DeadlineExceeded once it has passed.
func TestCheckpointContainerTimeout(t *testing.T) {
	r := newTestRuntime(t, Options{})
	_, id := runContainer(t, r, "p", "")
	if _, err := r.SetFaults(context.Background(), &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "CheckpointContainer", HangRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	loc := filepath.Join(t.TempDir(), "a.tar")
	_, err := r.CheckpointContainer(context.Background(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc, Timeout: 1})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DeadlineExceeded after the 1 s timeout", err)
	}
	if _, err := os.Stat(loc); err == nil {
		t.Errorf("a timed-out checkpoint wrote %s", loc)
	}
}
