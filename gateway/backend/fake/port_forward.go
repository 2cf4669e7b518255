package fake

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PortForward returns the streaming server's one-time URL for forwarding
// ports of a READY sandbox; as containerd, an unknown sandbox is NotFound
// and one that is not READY FailedPrecondition.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := r.inject(ctx, "PortForward"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	_, err := r.readySandboxLocked(req.GetPodSandboxId())
	r.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	server, err := r.streaming.get()
	if err != nil {
		return nil, err
	}
	return server.GetPortForward(req)
}

// readySandboxLocked finds a sandbox whose network can be reached. The
// caller holds r.mu.
func (r *Runtime) readySandboxLocked(id string) (*sandbox, error) {
	sb, err := r.st.sandbox(id)
	if err != nil {
		return nil, fmt.Errorf("failed to find sandbox %q: %w", id, err)
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("sandbox container %q is not running: %w", sb.id, errdefs.ErrFailedPrecondition)
	}
	return sb, nil
}

// PortForward connects one forwarded connection to a port of the sandbox
// for the streaming server. The fake has no network namespace: every port
// of a READY sandbox is an echo server, which sends back everything the
// client sends and closes its side when the client has closed its own. A
// connection open when the sandbox stops goes on echoing; it ends with the
// client, or with the runtime's Close.
func (s streams) PortForward(_ context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	s.r.mu.RLock()
	_, err := s.r.readySandboxLocked(sandboxID)
	s.r.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("port %d: %w", port, err)
	}
	// struct{ io.Reader } hides any WriterTo, so the copy reads and writes
	// the one stream in turn.
	if _, err := io.Copy(stream, struct{ io.Reader }{stream}); err != nil {
		return fmt.Errorf("port %d: echo: %w", port, err)
	}
	return nil
}
