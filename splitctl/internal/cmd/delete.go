package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/splitctl/internal/client"
)

type deleteOptions struct {
	gracePeriod int
	now         bool
	force       bool
	wait        bool
	timeout     time.Duration
}

// deletePollInterval is how often --wait asks whether the pod is gone.
const deletePollInterval = 500 * time.Millisecond

func newDeleteCommand(g *globals) *cobra.Command {
	o := &deleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete pods NAME...",
		Short: "Delete pods applied through splitctl",
		Example: `  splitctl delete pod web
  splitctl delete pod web --grace-period=5
  splitctl delete pod web --now`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError(cmd, "You must provide one or more resources by argument or filename.")
			}
			names, _, err := podNames(cmd, args, false)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				return usageError(cmd, "resource(s) were provided, but no name was specified")
			}
			grace, err := o.gracePeriodSeconds(cmd.Flags().Changed("grace-period"))
			if err != nil {
				return usageError(cmd, "%v", err)
			}
			return runDelete(cmd, g, o, names, grace)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.gracePeriod, "grace-period", -1, "Seconds given to the pod to terminate gracefully; negative uses the pod's own. 0 only with --force")
	f.BoolVar(&o.now, "now", false, "If true, signal the pod for immediate shutdown (same as --grace-period=1)")
	f.BoolVar(&o.force, "force", false, "Delete at once, without waiting for the containers to stop (with --grace-period=0)")
	f.BoolVar(&o.wait, "wait", true, "Wait for the pods to be gone before returning")
	f.DurationVar(&o.timeout, "timeout", 0, "How long to wait for the deletion; 0 means forever")
	return cmd
}

// gracePeriodSeconds applies kubectl delete's flag rules (DeleteOptions
// Complete/Validate): --now means 1; --grace-period=0 without --force becomes
// 1 to avoid accidental force deletion; --force alone means 0. nil leaves the
// pod's terminationGracePeriodSeconds in force.
func (o *deleteOptions) gracePeriodSeconds(graceSet bool) (*int64, error) {
	grace := o.gracePeriod
	if o.now {
		if graceSet && grace != -1 {
			return nil, errors.New("--now and --grace-period cannot be specified together")
		}
		grace = 1
	}
	if grace == 0 && !o.force {
		grace = 1
	}
	if o.force && grace < 0 {
		grace = 0
	}
	if grace < 0 {
		return nil, nil
	}
	g := int64(grace)
	return &g, nil
}

func runDelete(cmd *cobra.Command, g *globals, o *deleteOptions, names []string, grace *int64) error {
	ctx := cmd.Context()
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	forced := grace != nil && *grace == 0
	if forced {
		fmt.Fprintln(g.env.ErrOut, "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.")
	}
	var errs []error
	var deleted []string
	for _, name := range names {
		_, err := c.Delete(ctx, connect.NewRequest(&podv1.DeleteRequest{Namespace: g.namespace, Name: name, GracePeriodSeconds: grace}))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if forced {
			fmt.Fprintf(g.env.Out, "pod %q force deleted\n", name)
		} else {
			fmt.Fprintf(g.env.Out, "pod %q deleted\n", name)
		}
		deleted = append(deleted, name)
	}
	if o.wait && !forced {
		for _, name := range deleted {
			if err := waitGone(ctx, g, c, name, o.timeout); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return joinErrors(g, errs)
}

// waitGone polls until Get answers NotFound, showing progress on stderr.
func waitGone(ctx context.Context, g *globals, c podv1connect.PodServiceClient, name string, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	prog := newProgress(g.env.ErrOut, g.env.IsTerminal, g.env.Now)
	defer prog.Done()
	tick := time.NewTicker(deletePollInterval)
	defer tick.Stop()
	for {
		_, err := c.Get(ctx, connect.NewRequest(&podv1.GetRequest{Namespace: g.namespace, Name: name}))
		if client.IsNotFound(err) {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		prog.Update(fmt.Sprintf("waiting for pod/%s to terminate", name))
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out waiting for the condition on pods/%s", name)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
