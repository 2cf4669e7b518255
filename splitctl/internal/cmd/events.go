package cmd

import (
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/client"
	"github.com/splitlet/splitlet/splitctl/internal/printers"
)

type eventsOptions struct {
	forObject     string
	watch         bool
	allNamespaces bool
	output        string
	noHeaders     bool
}

func newEventsCommand(g *globals) *cobra.Command {
	o := &eventsOptions{}
	cmd := &cobra.Command{
		Use:   "events [--for pod/NAME] [-w]",
		Short: "List events, as kubectl events does",
		Example: `  splitctl events
  splitctl events --for pod/web -w
  splitctl events -A -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.forObject, "for", "", "Only the events of this pod (pod/NAME)")
	f.BoolVarP(&o.watch, "watch", "w", false, "After listing, watch for new events")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Events of every namespace")
	f.StringVarP(&o.output, "output", "o", "", "Output format: json or yaml")
	f.BoolVar(&o.noHeaders, "no-headers", false, "Do not print the table header")
	return cmd
}

func runEvents(cmd *cobra.Command, g *globals, o *eventsOptions) error {
	format, err := parseOutput(o.output, outputTable, outputJSON, outputYAML)
	if err != nil {
		return err
	}
	name := ""
	if o.forObject != "" {
		kind, n, ok := strings.Cut(o.forObject, "/")
		if !ok || !isPodResource(kind) || n == "" {
			return usageError(cmd, "--for must be in resource/name form with the pod resource, e.g. pod/web")
		}
		name = n
	}
	namespace := g.namespace
	if o.allNamespaces {
		namespace = ""
	}
	ctx := cmd.Context()
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	stream, err := c.Events(ctx, connect.NewRequest(&podv1.EventsRequest{Namespace: namespace, Name: name, Follow: o.watch}))
	if err != nil {
		return err
	}
	defer stream.Close()
	headerOut := o.noHeaders
	printed := 0
	for stream.Receive() {
		batch := stream.Msg().GetEvents()
		if format != outputTable {
			if err := printEventObjects(g, format, batch, o.watch); err != nil {
				return err
			}
			printed += len(batch)
			continue
		}
		var events []*corev1.Event
		for _, s := range batch {
			ev, err := client.EventFromStruct(s)
			if err != nil {
				return err
			}
			events = append(events, ev)
		}
		printers.SortEvents(events)
		tw := printers.NewTabWriter(g.env.Out)
		if !headerOut && len(events) > 0 {
			printers.WriteRow(tw, printers.EventsTableHeader(o.allNamespaces))
			headerOut = true
		}
		for _, ev := range events {
			printers.WriteRow(tw, printers.EventCells(ev, o.allNamespaces, g.env.Now()))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		printed += len(events)
	}
	if err := stream.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	if printed == 0 && !o.watch && format == outputTable {
		if namespace == "" {
			fmt.Fprintln(g.env.ErrOut, "No events found.")
		} else {
			fmt.Fprintf(g.env.ErrOut, "No events found in %s namespace.\n", namespace)
		}
	}
	return nil
}

// printEventObjects prints one batch as a List, or each event on its own
// while watching, as kubectl events -o does.
func printEventObjects(g *globals, format outputFormat, batch []*structpb.Struct, watching bool) error {
	if !watching {
		return printObjects(g.env.Out, format, "Event", batch, true)
	}
	for _, s := range batch {
		if err := printObjects(g.env.Out, format, "Event", []*structpb.Struct{s}, false); err != nil {
			return err
		}
	}
	return nil
}
