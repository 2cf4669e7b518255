package cmd

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/splitctl/internal/client"
	"github.com/splitlet/splitlet/splitctl/internal/printers"
)

func newDescribeCommand(g *globals) *cobra.Command {
	var selector string
	cmd := &cobra.Command{
		Use:   "describe pods [NAME...]",
		Short: "Show details of pods: containers, conditions and events",
		Example: `  splitctl describe pod web
  splitctl describe pods -l app=web`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError(cmd, "You must specify the type of resource to describe. Use \"pods\".")
			}
			names, _, err := podNames(cmd, args, false)
			if err != nil {
				return err
			}
			return runDescribe(cmd, g, names, selector)
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "Label selector to filter on")
	return cmd
}

func runDescribe(cmd *cobra.Command, g *globals, names []string, selector string) error {
	ctx := cmd.Context()
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	var pods []*structpb.Struct
	var errs []error
	if len(names) == 0 {
		resp, err := c.List(ctx, connect.NewRequest(&podv1.ListRequest{Namespace: g.namespace, LabelSelector: selector}))
		if err != nil {
			return err
		}
		pods = resp.Msg.GetPods()
		if len(pods) == 0 {
			fmt.Fprintf(g.env.ErrOut, "No resources found in %s namespace.\n", g.namespace)
			return nil
		}
	}
	for _, name := range names {
		resp, err := c.Get(ctx, connect.NewRequest(&podv1.GetRequest{Namespace: g.namespace, Name: name}))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pods = append(pods, resp.Msg.GetPod())
	}
	for i, s := range pods {
		pod, err := client.PodFromStruct(s)
		if err != nil {
			return err
		}
		events, err := podEvents(ctx, c, pod.Namespace, pod.Name)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(g.env.Out) // kubectl separates described objects with a blank line
		}
		if err := printers.DescribePod(g.env.Out, pod, events, g.env.Now()); err != nil {
			return err
		}
	}
	return joinErrors(g, errs)
}

// podEvents reads a pod's recorded events (no follow).
func podEvents(ctx context.Context, c podv1connect.PodServiceClient, namespace, name string) ([]*corev1.Event, error) {
	stream, err := c.Events(ctx, connect.NewRequest(&podv1.EventsRequest{Namespace: namespace, Name: name}))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var events []*corev1.Event
	for stream.Receive() {
		for _, s := range stream.Msg().GetEvents() {
			ev, err := client.EventFromStruct(s)
			if err != nil {
				return nil, err
			}
			events = append(events, ev)
		}
	}
	return events, stream.Err()
}
