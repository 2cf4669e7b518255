package nodeapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CheckpointContainer records the request and writes the container's ID
// at the location, as a runtime writes its archive there; checkpointErr
// fails it instead.
func (f *fakeRuntime) CheckpointContainer(_ context.Context, in *runtimeapi.CheckpointContainerRequest, _ ...grpc.CallOption) (*runtimeapi.CheckpointContainerResponse, error) {
	f.mu.Lock()
	f.requests = append(f.requests, proto.Clone(in))
	err := f.checkpointErr
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(in.GetLocation(), []byte(in.GetContainerId()), 0o600); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &runtimeapi.CheckpointContainerResponse{}, nil
}

// checkpointRequests returns the CheckpointContainer requests recorded so
// far and forgets every recorded request.
func (f *fakeRuntime) checkpointRequests() []*runtimeapi.CheckpointContainerRequest {
	var out []*runtimeapi.CheckpointContainerRequest
	for _, r := range f.takeRequests() {
		if c, ok := r.(*runtimeapi.CheckpointContainerRequest); ok {
			out = append(out, c)
		}
	}
	return out
}

// /checkpoint/{ns}/{pod}/{container} has the runtime checkpoint the
// running container to <dir>/checkpoint-<name>_<ns>-<container>-<RFC 3339>.tar
// and answers {"items": [path]}, as the kubelet's checkpoint handler. It
// needs nodes/checkpoint.
func TestCheckpoint(t *testing.T) {
	f := newFixture(t, admin)
	dir := t.TempDir()
	now := logBase.Add(35 * time.Second)
	srv := New(Options{NodeName: testNode, Pods: f.srv.opts.Pods, Runtime: f.rt, Metrics: f.metrics, Auth: admin,
		CheckpointDir: dir, Now: func() time.Time { return now }})
	wantPath := filepath.Join(dir, "checkpoint-web_default-app-"+now.Format(time.RFC3339)+".tar")

	code, body, h := post(t, srv, "/checkpoint/default/web/app?timeout=7", "checkpoint")
	if code != http.StatusOK || h.Get("Content-Type") != "application/json" {
		t.Fatalf("checkpoint: %d %q %q, want 200 JSON", code, body, h.Get("Content-Type"))
	}
	var resp struct{ Items []string }
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Items) != 1 || resp.Items[0] != wantPath {
		t.Fatalf("checkpoint answered %q (%v), want items [%s]", body, err, wantPath)
	}
	if data, err := os.ReadFile(wantPath); err != nil || string(data) != "cur" {
		t.Errorf("archive %s: %q %v, want the running container's", wantPath, data, err)
	}
	reqs := f.rt.checkpointRequests()
	if len(reqs) != 1 || reqs[0].GetContainerId() != "cur" || reqs[0].GetLocation() != wantPath || reqs[0].GetTimeout() != 7 {
		t.Errorf("CheckpointContainer requests %v, want one of cur to %s with timeout 7", reqs, wantPath)
	}

	tests := []struct {
		desc     string
		path     string
		token    string
		fail     error // what the runtime answers
		wantCode int
		wantBody string
		wantCall bool // the runtime is asked
	}{
		{desc: "no credential", path: "/checkpoint/default/web/app", wantCode: http.StatusUnauthorized},
		{desc: "nodes/proxy is not nodes/checkpoint", path: "/checkpoint/default/web/app", token: "proxy", wantCode: http.StatusForbidden,
			wantBody: "verb=create, resource=nodes, subresource(s)=[checkpoint]"},
		{desc: "unknown pod", path: "/checkpoint/default/missing/app", token: "checkpoint", wantCode: http.StatusNotFound, wantBody: "pod does not exist"},
		{desc: "container not in the spec", path: "/checkpoint/default/web/other", token: "checkpoint", wantCode: http.StatusNotFound,
			wantBody: "container other does not exist"},
		{desc: "a timeout that is no integer", path: "/checkpoint/default/web/app?timeout=soon", token: "checkpoint", wantCode: http.StatusNotFound,
			wantBody: "cannot parse value of timeout parameter"},
		{desc: "a negative timeout", path: "/checkpoint/default/web/app?timeout=-1", token: "checkpoint", wantCode: http.StatusInternalServerError,
			wantBody: "checkpointing of default/web/app failed (CheckpointContainer requires the timeout value to be > 0)"},
		{desc: "a container that does not run", path: "/checkpoint/default/web/side", token: "checkpoint", wantCode: http.StatusInternalServerError,
			wantBody: "checkpointing of default/web/side failed (container side not found)"},
		{desc: "a runtime without checkpointing", path: "/checkpoint/default/web/app", token: "checkpoint",
			fail: status.Error(codes.Unimplemented, "method CheckpointContainer not implemented"), wantCode: http.StatusInternalServerError, wantCall: true,
			wantBody: "checkpointing of default/web/app failed (rpc error: code = Unimplemented desc = method CheckpointContainer not implemented)"},
		{desc: "a runtime error", path: "/checkpoint/default/web/app", token: "checkpoint",
			fail: status.Error(codes.Unknown, "criu binary not found"), wantCode: http.StatusInternalServerError, wantCall: true,
			wantBody: "failed (rpc error: code = Unknown desc = criu binary not found)"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			f.rt.mu.Lock()
			f.rt.checkpointErr = tc.fail
			f.rt.mu.Unlock()
			code, body, _ := post(t, srv, tc.path, tc.token)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("POST %s: %d %q, want %d with %q", tc.path, code, body, tc.wantCode, tc.wantBody)
			}
			if got := len(f.rt.checkpointRequests()); got != 0 != tc.wantCall {
				t.Errorf("POST %s asked the runtime %d times, want asked: %v", tc.path, got, tc.wantCall)
			}
		})
	}

	// GET is no checkpoint; a server without a checkpoint directory serves
	// none, as a kubelet without the ContainerCheckpoint gate.
	if code, _ := get(t, srv, "/checkpoint/default/web/app", "checkpoint"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /checkpoint: %d, want 405", code)
	}
	if code, _, _ := post(t, f.srv, "/checkpoint/default/web/app", "checkpoint"); code != http.StatusNotFound {
		t.Errorf("/checkpoint without a checkpoint directory: %d, want 404", code)
	}
	if reqs := f.rt.checkpointRequests(); len(reqs) != 0 {
		t.Errorf("the runtime was asked %v", reqs)
	}
}
