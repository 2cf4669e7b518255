package cmd

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// runInteractiveExec is exec -i / -t: the server prepares the exec and
// returns the runtime's streaming URL (proxied by the gateway), and splitctl
// speaks the Kubernetes remotecommand protocol (SPDY) to it, as crictl exec
// does. With -t and a terminal on stdin, the terminal is put in raw mode and
// its size follows SIGWINCH, like kubectl's TTY handling.
func runInteractiveExec(cmd *cobra.Command, g *globals, o *execOptions, name string, command []string) error {
	ctx := cmd.Context()
	// As kubectl's SetupTTY: a TTY needs stdin and a terminal behind it;
	// otherwise warn and go on without one, so scripts can still pipe data.
	tty := false
	var termFd int
	if o.tty {
		if f, ok := g.env.In.(*os.File); ok && o.stdin && term.IsTerminal(int(f.Fd())) {
			tty, termFd = true, int(f.Fd())
		} else {
			fmt.Fprintln(g.env.ErrOut, "Unable to use a TTY - input is not a terminal or the right kind of file")
		}
	}
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	resp, err := c.Exec(ctx, connect.NewRequest(&podv1.ExecRequest{
		Namespace: g.namespace,
		Name:      name,
		Container: o.container,
		Command:   command,
		Stdin:     o.stdin,
		Tty:       tty,
	}))
	if err != nil {
		return err
	}
	u, err := url.Parse(resp.Msg.GetUrl())
	if err != nil || u.Host == "" {
		return fmt.Errorf("the server returned an unusable streaming URL %q", resp.Msg.GetUrl())
	}
	// The CRI streaming server has no credentials of ours to check; crictl
	// uses the same empty, TLS-insecure config.
	executor, err := remotecommand.NewSPDYExecutor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "POST", u)
	if err != nil {
		return fmt.Errorf("preparing the exec stream: %w", err)
	}
	opts := remotecommand.StreamOptions{Stdout: g.env.Out, Stderr: g.env.ErrOut, Tty: tty}
	if o.stdin {
		opts.Stdin = g.env.In
	}
	if tty {
		// With a TTY the runtime merges stderr into stdout.
		opts.Stderr = nil
		state, err := term.MakeRaw(termFd)
		if err != nil {
			return fmt.Errorf("setting the terminal to raw mode: %w", err)
		}
		defer term.Restore(termFd, state)
		sizes := newTerminalSizes(termFd)
		defer sizes.stop()
		opts.TerminalSizeQueue = sizes
	}
	err = executor.StreamWithContext(ctx, opts)
	var exit interface{ ExitStatus() int }
	if errors.As(err, &exit) {
		// kubectl exec ends with the remote command's code.
		fmt.Fprintf(g.env.ErrOut, "command terminated with exit code %d\n", exit.ExitStatus())
		return &ExitError{Code: exit.ExitStatus()}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("exec stream: %w", err)
	}
	return nil
}

// terminalSizes feeds the terminal's size to the exec stream: once at the
// start and on every SIGWINCH.
type terminalSizes struct {
	fd    int
	sigs  chan os.Signal
	first bool
	done  chan struct{}
}

var _ remotecommand.TerminalSizeQueue = (*terminalSizes)(nil)

func newTerminalSizes(fd int) *terminalSizes {
	t := &terminalSizes{fd: fd, sigs: make(chan os.Signal, 1), first: true, done: make(chan struct{})}
	signal.Notify(t.sigs, syscall.SIGWINCH)
	return t
}

// Next blocks until the size changes; nil ends the queue.
func (t *terminalSizes) Next() *remotecommand.TerminalSize {
	if !t.first {
		select {
		case <-t.sigs:
		case <-t.done:
			return nil
		}
	}
	t.first = false
	w, h, err := term.GetSize(t.fd)
	if err != nil {
		return nil
	}
	return &remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}
}

func (t *terminalSizes) stop() {
	signal.Stop(t.sigs)
	close(t.done)
}
