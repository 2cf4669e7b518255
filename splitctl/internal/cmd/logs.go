package cmd

import (
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

type logsOptions struct {
	container  string
	follow     bool
	previous   bool
	tail       int64
	timestamps bool
	since      time.Duration
	sinceTime  string
	limitBytes int64
}

func newLogsCommand(g *globals) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs [pod/]NAME [-c CONTAINER]",
		Short: "Print the logs of a container in a pod",
		Example: `  splitctl logs web
  splitctl logs web -c sidecar --tail 20 -f
  splitctl logs web -p --timestamps`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := onePod(cmd, args[0])
			if err != nil {
				return err
			}
			if len(args) == 2 {
				// kubectl's deprecated "logs POD CONTAINER" form.
				if o.container != "" {
					return usageError(cmd, "only one of -c or an inline [CONTAINER] arg is allowed")
				}
				o.container = args[1]
			}
			req, err := o.request(g.namespace, name)
			if err != nil {
				return usageError(cmd, "%v", err)
			}
			return runLogs(cmd, g, req)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "Print the logs of this container")
	f.BoolVarP(&o.follow, "follow", "f", false, "Specify if the logs should be streamed")
	f.BoolVarP(&o.previous, "previous", "p", false, "Print the logs of the previous instance of the container")
	f.Int64Var(&o.tail, "tail", -1, "Lines of recent log to display; -1 shows all")
	f.BoolVar(&o.timestamps, "timestamps", false, "Include timestamps on each line")
	f.DurationVar(&o.since, "since", 0, "Only logs newer than a relative duration like 5s, 2m, or 3h")
	f.StringVar(&o.sinceTime, "since-time", "", "Only logs after a date (RFC3339)")
	f.Int64Var(&o.limitBytes, "limit-bytes", 0, "Maximum bytes of logs to return; 0 means no limit")
	return cmd
}

// request maps kubectl's logs flags onto a LogsRequest, with kubectl's
// validation (LogsOptions.Validate): --since and --since-time exclude each
// other, and negative limits are refused.
func (o *logsOptions) request(namespace, name string) (*podv1.LogsRequest, error) {
	req := &podv1.LogsRequest{
		Namespace:  namespace,
		Name:       name,
		Container:  o.container,
		Follow:     o.follow,
		Previous:   o.previous,
		Timestamps: o.timestamps,
	}
	if o.since != 0 && o.sinceTime != "" {
		return nil, errUsage("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if o.tail < -1 {
		return nil, errUsage("--tail must be greater than or equal to -1")
	}
	if o.tail >= 0 {
		req.TailLines = &o.tail
	}
	if o.limitBytes < 0 {
		return nil, errUsage("--limit-bytes must be greater than 0")
	}
	if o.limitBytes > 0 {
		req.LimitBytes = &o.limitBytes
	}
	if o.since < 0 {
		return nil, errUsage("--since must be greater than 0")
	}
	if o.since > 0 {
		// kubectl rounds up to whole seconds (int64(math.Ceil(since.Seconds()))).
		secs := int64((o.since + time.Second - 1) / time.Second)
		req.SinceSeconds = &secs
	}
	if o.sinceTime != "" {
		t, err := time.Parse(time.RFC3339, o.sinceTime)
		if err != nil {
			return nil, errUsage("--since-time must be an RFC3339 time: " + err.Error())
		}
		req.SinceTime = timestamppb.New(t)
	}
	return req, nil
}

type errUsage string

func (e errUsage) Error() string { return string(e) }

func runLogs(cmd *cobra.Command, g *globals, req *podv1.LogsRequest) error {
	ctx := cmd.Context()
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	stream, err := c.Logs(ctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	defer stream.Close()
	for stream.Receive() {
		if _, err := g.env.Out.Write(stream.Msg().GetData()); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
