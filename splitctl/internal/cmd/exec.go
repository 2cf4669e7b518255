package cmd

import (
	"fmt"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

type execOptions struct {
	container string
	stdin     bool
	tty       bool
	timeout   int64
}

func newExecCommand(g *globals) *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec [pod/]NAME [-c CONTAINER] [-i] [-t] -- COMMAND [args...]",
		Short: "Run a command in a container",
		Example: `  splitctl exec web -- date
  splitctl exec web -c sidecar -- cat /etc/hosts
  splitctl exec -it web -- sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if len(args) == 0 || dash == 0 {
				return usageError(cmd, "pod or type/name must be specified")
			}
			name, err := onePod(cmd, args[0])
			if err != nil {
				return err
			}
			command := args[1:]
			if len(command) == 0 {
				return usageError(cmd, "you must specify at least one command for the container")
			}
			if dash < 0 {
				// kubectl still runs "exec POD CMD" but asks for "--".
				fmt.Fprintf(g.env.ErrOut, "%s exec [POD] [COMMAND] is DEPRECATED and will be removed in a future version. Use %s exec [POD] -- [COMMAND] instead.\n", cmd.Root().Name(), cmd.Root().Name())
			}
			if o.stdin || o.tty {
				return runInteractiveExec(cmd, g, o, name, command)
			}
			return runExecSync(cmd, g, o, name, command)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "Container name; required when the pod has several")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "Pass stdin to the container")
	f.BoolVarP(&o.tty, "tty", "t", false, "Stdin is a TTY")
	f.Int64Var(&o.timeout, "timeout", 0, "Seconds the command may run without -i/-t; 0 means no limit")
	return cmd
}

// runExecSync runs a non-interactive command through ExecSync and ends with
// its exit code, printing kubectl's "command terminated with exit code N".
func runExecSync(cmd *cobra.Command, g *globals, o *execOptions, name string, command []string) error {
	ctx := cmd.Context()
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	resp, err := c.ExecSync(ctx, connect.NewRequest(&podv1.ExecSyncRequest{
		Namespace:      g.namespace,
		Name:           name,
		Container:      o.container,
		Command:        command,
		TimeoutSeconds: o.timeout,
	}))
	if err != nil {
		return err
	}
	if _, err := g.env.Out.Write(resp.Msg.GetStdout()); err != nil {
		return err
	}
	if _, err := g.env.ErrOut.Write(resp.Msg.GetStderr()); err != nil {
		return err
	}
	if code := resp.Msg.GetExitCode(); code != 0 {
		fmt.Fprintf(g.env.ErrOut, "command terminated with exit code %d\n", code)
		return &ExitError{Code: int(code)}
	}
	return nil
}
