package fake

import (
	"context"
	"fmt"
	"io"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// Attach returns the streaming server's one-time URL for attaching to a
// running container; as containerd, a container that is not RUNNING is
// FailedPrecondition and an unknown one NotFound.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.inject(ctx, "Attach"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	_, err := r.runningContainerLocked(req.GetContainerId())
	r.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("failed to attach to container: %w", err)
	}
	server, err := r.streaming.get()
	if err != nil {
		return nil, err
	}
	return server.GetAttach(req)
}

// Attach attaches the client to the container for the streaming server. The
// container behaves as if it ran `cat`: what the client writes to its stdin
// comes back on stdout. The session ends when the client closes stdin or
// goes away (stdin fails), when the container leaves RUNNING (it exits, is
// stopped or removed: its exited channel closes), or when the runtime
// closes (ctx). Without stdin only the last two end it: a client that goes
// away is not noticed before, as containerd notices it only when a silent
// container next writes (the server's ctx is not cancelled once the
// connection is hijacked).
func (s streams) Attach(ctx context.Context, containerID string, in io.Reader, out, errw io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize) error {
	defer closeStreams(out, errw)
	exited, err := s.r.runningContainerExited(containerID)
	if err != nil {
		return fmt.Errorf("failed to attach to container: %w", err)
	}

	var stdinDone <-chan struct{} // nil without stdin: never ready
	if in != nil {
		var w io.Writer = io.Discard
		if out != nil {
			w = out
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Ends at the end of stdin, or when out or the connection is
			// closed after Attach returns.
			_, _ = io.Copy(w, in)
		}()
		stdinDone = done
	}
	select {
	case <-stdinDone:
	case <-exited:
	case <-ctx.Done():
	}
	return nil
}
