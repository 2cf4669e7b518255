package cmd

import (
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/manifest"
)

type applyOptions struct {
	files     []string
	recursive bool
	dryRun    string
	wait      bool
	timeout   time.Duration
}

var applyActions = map[podv1.ApplyAction]string{
	podv1.ApplyAction_APPLY_ACTION_CREATED:    "created",
	podv1.ApplyAction_APPLY_ACTION_CONFIGURED: "configured",
	podv1.ApplyAction_APPLY_ACTION_UNCHANGED:  "unchanged",
}

func newApplyCommand(g *globals) *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply -f FILENAME",
		Short: "Apply pods from files, directories or stdin",
		Example: `  splitctl apply -f pod.yaml
  splitctl apply -f manifests/ --wait
  cat pod.yaml | splitctl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "Files, directories or - (stdin) holding the pods to apply")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "Process the directories given with -f recursively")
	f.StringVar(&o.dryRun, "dry-run", "none", `Must be "none" or "server": with "server", the server validates without applying`)
	f.BoolVar(&o.wait, "wait", false, "Wait until every applied pod is Running (or finished)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long --wait waits; 0 means forever")
	return cmd
}

// runApply sends each source as one manifest, so a source is applied whole
// or not at all (the server's contract); like kubectl, it goes on with the
// other sources after a failure and reports every error.
func runApply(cmd *cobra.Command, g *globals, o *applyOptions) error {
	dryRun := false
	switch o.dryRun {
	case "none", "":
	case "server":
		dryRun = true
	default:
		return usageError(cmd, `invalid dry-run value (%v). Must be "none" or "server"`, o.dryRun)
	}
	if dryRun && o.wait {
		return usageError(cmd, "--wait cannot be used with --dry-run=server")
	}
	manifests, err := manifest.Read(o.files, o.recursive, g.env.In)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	var applied []podRef
	var errs []error
	for _, m := range manifests {
		resp, err := c.Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: m.Content, DryRun: dryRun}))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sourceName(m.Source), err))
			continue
		}
		for _, p := range resp.Msg.GetPods() {
			action := applyActions[p.GetAction()]
			if action == "" {
				action = "applied"
			}
			if dryRun {
				action += " (server dry run)"
			}
			fmt.Fprintf(g.env.Out, "pod/%s %s\n", p.GetName(), action)
			applied = append(applied, podRef{namespace: p.GetNamespace(), name: p.GetName()})
		}
	}
	if len(errs) > 0 {
		// A server error for a single source keeps its kubectl form.
		if len(errs) == 1 && len(manifests) == 1 {
			return errors.Unwrap(errs[0])
		}
		return errors.Join(errs...)
	}
	if o.wait && len(applied) > 0 {
		return waitForRunning(cmd, g, c, applied, o.timeout)
	}
	return nil
}

func sourceName(src string) string {
	if src == "-" {
		return "stdin"
	}
	return src
}
