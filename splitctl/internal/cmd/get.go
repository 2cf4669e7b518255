package cmd

import (
	"errors"
	"fmt"
	"io"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/client"
	"github.com/splitlet/splitlet/splitctl/internal/printers"
)

type getOptions struct {
	output        string
	watch         bool
	allNamespaces bool
	selector      string
	noHeaders     bool
}

func newGetCommand(g *globals) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get pods [NAME...]",
		Short: "Display one or many pods",
		Example: `  splitctl get pods
  splitctl get pod web -o yaml
  splitctl get pods -A -o wide -w`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "Output format: wide, json, yaml or name")
	f.BoolVarP(&o.watch, "watch", "w", false, "After listing, watch for changes")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "List pods across all namespaces")
	f.StringVarP(&o.selector, "selector", "l", "", "Label selector to filter on, e.g. app=web,tier!=db")
	f.BoolVar(&o.noHeaders, "no-headers", false, "Do not print the table header")
	return cmd
}

// podPrinter prints pods in the chosen format; the header is written before
// the first row only, so -w can keep adding rows.
type podPrinter struct {
	out       io.Writer
	format    outputFormat
	opts      printers.TableOptions
	noHeaders bool
	headerOut bool
	g         *globals
}

func (p *podPrinter) printRows(pods []*structpb.Struct) error {
	tw := printers.NewTabWriter(p.out)
	if !p.headerOut && !p.noHeaders {
		if err := printers.WriteRow(tw, printers.PodTableHeader(p.opts)); err != nil {
			return err
		}
	}
	p.headerOut = true
	for _, s := range pods {
		pod, err := client.PodFromStruct(s)
		if err != nil {
			return err
		}
		if p.format == outputName {
			fmt.Fprintf(tw, "pod/%s\n", pod.Name)
			continue
		}
		if err := printers.WriteRow(tw, printers.NewPodRow(pod, p.g.env.Now()).Cells(p.opts)); err != nil {
			return err
		}
	}
	return tw.Flush()
}

func runGet(cmd *cobra.Command, g *globals, o *getOptions, args []string) error {
	if len(args) == 0 {
		return usageError(cmd, "You must specify the type of resource to get. Use \"pods\".")
	}
	names, _, err := podNames(cmd, args, false)
	if err != nil {
		return err
	}
	format, err := parseOutput(o.output, outputTable, outputWide, outputJSON, outputYAML, outputName)
	if err != nil {
		return err
	}
	if len(names) > 0 && o.allNamespaces {
		return errors.New("a resource cannot be retrieved by name across all namespaces")
	}
	if len(names) > 0 && o.selector != "" {
		return errors.New("name cannot be provided when a selector is specified")
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
	p := &podPrinter{
		out:       g.env.Out,
		format:    format,
		opts:      printers.TableOptions{WithNamespace: o.allNamespaces, Wide: format == outputWide},
		noHeaders: o.noHeaders || format == outputName,
		g:         g,
	}
	if o.watch {
		if len(names) > 1 {
			return errors.New("watch is only supported on individual resources and resource collections, but 2 resources were found")
		}
		name := ""
		if len(names) == 1 {
			name = names[0]
		}
		return watchPods(cmd, g, p, namespace, name, o.selector)
	}

	var pods []*structpb.Struct
	var errs []error
	if len(names) == 0 {
		resp, err := c.List(ctx, connect.NewRequest(&podv1.ListRequest{Namespace: namespace, LabelSelector: o.selector}))
		if err != nil {
			return err
		}
		pods = resp.Msg.GetPods()
		if len(pods) == 0 && (format == outputTable || format == outputWide) {
			if namespace == "" {
				fmt.Fprintln(g.env.ErrOut, "No resources found")
			} else {
				fmt.Fprintf(g.env.ErrOut, "No resources found in %s namespace.\n", namespace)
			}
			return nil
		}
	} else {
		for _, name := range names {
			resp, err := c.Get(ctx, connect.NewRequest(&podv1.GetRequest{Namespace: namespace, Name: name}))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			pods = append(pods, resp.Msg.GetPod())
		}
	}
	if len(pods) > 0 {
		switch format {
		case outputJSON, outputYAML:
			// kubectl prints a List unless exactly one object was named.
			if err := printObjects(g.env.Out, format, "Pod", pods, len(names) != 1); err != nil {
				return err
			}
		default:
			if err := p.printRows(pods); err != nil {
				return err
			}
		}
	}
	return joinErrors(g, errs)
}

// joinErrors reports all but the last error on stderr, as kubectl does for
// several names, and returns the last one for the exit code.
func joinErrors(g *globals, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	for _, err := range errs[:len(errs)-1] {
		fmt.Fprintln(g.env.ErrOut, ErrorMessage(err))
	}
	return errs[len(errs)-1]
}

// watchPods prints the current pods, then every change, until interrupted
// (kubectl get -w).
func watchPods(cmd *cobra.Command, g *globals, p *podPrinter, namespace, name, selector string) error {
	ctx := cmd.Context()
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	stream, err := c.Watch(ctx, connect.NewRequest(&podv1.WatchRequest{Namespace: namespace, Name: name, LabelSelector: selector}))
	if err != nil {
		return err
	}
	defer stream.Close()
	for stream.Receive() {
		pod := stream.Msg().GetPod()
		switch p.format {
		case outputJSON, outputYAML:
			if err := printObjects(g.env.Out, p.format, "Pod", []*structpb.Struct{pod}, false); err != nil {
				return err
			}
			if p.format == outputYAML {
				fmt.Fprintln(g.env.Out, "---")
			}
		default:
			if err := p.printRows([]*structpb.Struct{pod}); err != nil {
				return err
			}
		}
	}
	if err := stream.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
