package fake

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecSync "runs" a command in a running container. As containerd's
// execInContainer, a container that is not running is an error ("container
// is in CONTAINER_EXITED state"). A non-zero exit code is a result, not an
// error.
//
// Commands are interpreted so probes and scenario tests mean something:
// `echo ARGS...` prints the args joined by spaces and a newline; `true` and
// `false` exit 0 and 1; `cat FILE` fails with exit code 1 (the fake has no
// files); `sh -c "..."` (or bash) interprets its script as one such command
// or `exit N`; anything else exits 0 with no output. A container scripted
// with exec-fail=N answers its first N execs with exit code 1 and stderr
// "probe failed" (exec-fail=always: every exec).
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if err := r.inject(ctx, "ExecSync"); err != nil {
		return nil, err
	}
	if len(req.GetCmd()) == 0 {
		return nil, fmt.Errorf("failed to exec in container: empty command: %w", errdefs.ErrInvalidArgument)
	}
	r.mu.Lock()
	c, err := r.runningContainerLocked(req.GetContainerId())
	if err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("failed to exec in container: %w", err)
	}
	c.execCalls++
	fail := c.beh.execFail == execFailAlways || c.execCalls <= c.beh.execFail
	r.mu.Unlock()

	if fail {
		return &runtimeapi.ExecSyncResponse{Stderr: []byte("probe failed"), ExitCode: 1}, nil
	}
	stdout, stderr, code := interpret(req.GetCmd(), 0)
	return &runtimeapi.ExecSyncResponse{Stdout: []byte(stdout), Stderr: []byte(stderr), ExitCode: code}, nil
}

// Exec checks what ExecSync checks and returns the streaming server's
// one-time URL for the command; the command runs when the client connects
// (streams.Exec in shell.go). Unlike ExecSync, it ignores exec-fail: that
// scripts probes, which use ExecSync. The streaming server's own request
// checks (tty with stderr, no stream at all) are gRPC InvalidArgument
// statuses, as containerd returns them from the same library.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := r.inject(ctx, "Exec"); err != nil {
		return nil, err
	}
	if len(req.GetCmd()) == 0 {
		return nil, fmt.Errorf("failed to exec in container: empty command: %w", errdefs.ErrInvalidArgument)
	}
	r.mu.RLock()
	_, err := r.runningContainerLocked(req.GetContainerId())
	r.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("failed to exec in container: %w", err)
	}
	server, err := r.streaming.get()
	if err != nil {
		return nil, err
	}
	return server.GetExec(req)
}

// runningContainerLocked finds a container to exec in or attach to: as
// containerd, one that is not RUNNING is FailedPrecondition ("container is
// in CONTAINER_EXITED state"). The caller holds r.mu.
func (r *Runtime) runningContainerLocked(id string) (*container, error) {
	c, err := r.st.container(id)
	if err != nil {
		return nil, fmt.Errorf("failed to find container %q in store: %w", id, err)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, fmt.Errorf("container is in %s state: %w", c.state, errdefs.ErrFailedPrecondition)
	}
	return c, nil
}

// runningContainerExited is the running container's exited channel, which
// closes when it stops: what a stream into it waits on.
func (r *Runtime) runningContainerExited(id string) (<-chan struct{}, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.runningContainerLocked(id)
	if err != nil {
		return nil, err
	}
	return c.exited, nil
}

// interpret runs the tiny command language ExecSync understands.
func interpret(cmd []string, depth int) (stdout, stderr string, code int32) {
	if len(cmd) == 0 {
		return "", "", 0
	}
	args := cmd[1:]
	switch name := path.Base(cmd[0]); name {
	case "echo":
		if len(args) > 0 && args[0] == "-n" {
			return strings.Join(args[1:], " "), "", 0
		}
		return strings.Join(args, " ") + "\n", "", 0
	case "true":
		return "", "", 0
	case "false":
		return "", "", 1
	case "cat":
		if len(args) == 0 {
			return "", "", 0
		}
		return "", "cat: can't open '" + args[0] + "': No such file or directory\n", 1
	case "sh", "bash", "ash":
		if len(args) >= 2 && args[0] == "-c" && depth < 4 {
			words, ok := shellWords(args[1])
			if !ok {
				return "", name + ": syntax error: unterminated quoted string\n", 2
			}
			return interpret(words, depth+1)
		}
		return "", "", 0
	case "exit":
		if depth == 0 {
			break // only a shell builtin
		}
		if len(args) == 0 {
			return "", "", 0
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return "", "sh: exit: Illegal number: " + args[0] + "\n", 2
		}
		return "", "", int32(n & 0xff)
	}
	return "", "", 0
}

// shellWords splits a shell script into words, honouring single and double
// quotes. It is enough for `echo "a b"` and `exit 3`.
func shellWords(s string) ([]string, bool) {
	var (
		words []string
		cur   strings.Builder
		quote rune
		have  bool
	)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, have = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if have {
				words = append(words, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if have {
		words = append(words, cur.String())
	}
	return words, true
}
