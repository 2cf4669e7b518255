package cmd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/splitctl/internal/client"
	"github.com/splitlet/splitlet/splitctl/internal/printers"
)

type podRef struct {
	namespace, name string
}

func (r podRef) String() string { return r.namespace + "/" + r.name }

// spinnerTick is how often the spinner is redrawn while nothing changes.
const spinnerTick = 150 * time.Millisecond

type watchItem struct {
	resp *podv1.WatchResponse
	err  error
}

// waitForRunning watches until every pod in refs is Running, Succeeded or
// Failed, showing the pods still waited for (with their STATUS column) on
// stderr. A Failed pod ends the wait with an error.
func waitForRunning(cmd *cobra.Command, g *globals, c podv1connect.PodServiceClient, refs []podRef, timeout time.Duration) error {
	ctx := cmd.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// The watch itself gets no deadline: Connect would send it to the server,
	// which would end the stream cleanly just before the client's timeout.
	watchCtx, stop := context.WithCancel(cmd.Context())
	defer stop()
	items := make(chan watchItem)
	go watchPodsInto(watchCtx, c, items)

	pending := map[podRef]string{}
	for _, r := range refs {
		pending[r] = string(corev1.PodPending) // just applied; the watch says more
	}
	prog := newProgress(g.env.ErrOut, g.env.IsTerminal, g.env.Now)
	defer prog.Done()
	ticker := time.NewTicker(spinnerTick)
	defer ticker.Stop()
	var failed []string
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			prog.Done()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out waiting for the condition on %s", pendingNames(pending))
			}
			return ctx.Err()
		case <-ticker.C:
			prog.Update(progressLine(pending))
		case it, ok := <-items:
			if !ok || it.resp == nil {
				if ctx.Err() != nil {
					continue // the stream ended because the wait did: report that above
				}
				prog.Done()
				if it.err == nil {
					it.err = errors.New("the server closed the watch")
				}
				return it.err
			}
			pod, err := client.PodFromStruct(it.resp.GetPod())
			if err != nil {
				return err
			}
			ref := podRef{namespace: pod.Namespace, name: pod.Name}
			if _, ok := pending[ref]; !ok {
				continue
			}
			if it.resp.GetType() == podv1.WatchEventType_WATCH_EVENT_TYPE_DELETED {
				prog.Done()
				return fmt.Errorf("pod/%s was deleted while waiting for it", pod.Name)
			}
			row := printers.NewPodRow(pod, g.env.Now())
			switch pod.Status.Phase {
			case corev1.PodRunning, corev1.PodSucceeded:
				prog.Done()
				fmt.Fprintf(g.env.ErrOut, "pod/%s is %s\n", pod.Name, row.Status)
				delete(pending, ref)
			case corev1.PodFailed:
				prog.Done()
				fmt.Fprintf(g.env.ErrOut, "pod/%s failed: %s\n", pod.Name, row.Status)
				failed = append(failed, "pod/"+pod.Name)
				delete(pending, ref)
			default:
				pending[ref] = row.Status
				prog.Update(progressLine(pending))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s failed", strings.Join(failed, ", "))
	}
	return nil
}

// rewatchDelay is the pause before reopening a watch the server ended
// cleanly (it ends a watcher that fell behind; a new watch starts with the
// current pods, so nothing is missed).
const rewatchDelay = 500 * time.Millisecond

// watchPodsInto feeds every watch event into items until ctx ends, reopening
// the watch when the server closes it without an error. A failed watch is
// sent as an item with err set, after which items is closed.
func watchPodsInto(ctx context.Context, c podv1connect.PodServiceClient, items chan<- watchItem) {
	defer close(items)
	send := func(it watchItem) bool {
		select {
		case items <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		stream, err := c.Watch(ctx, connect.NewRequest(&podv1.WatchRequest{}))
		if err != nil {
			send(watchItem{err: err})
			return
		}
		for stream.Receive() {
			if !send(watchItem{resp: stream.Msg()}) {
				stream.Close()
				return
			}
		}
		err = stream.Err()
		stream.Close()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			send(watchItem{err: err})
			return
		}
		select {
		case <-time.After(rewatchDelay):
		case <-ctx.Done():
			return
		}
	}
}

func progressLine(pending map[podRef]string) string {
	var parts []string
	for r, status := range pending {
		parts = append(parts, fmt.Sprintf("%s (%s)", r.name, status))
	}
	sort.Strings(parts)
	noun := "pods"
	if len(pending) == 1 {
		noun = "pod"
	}
	return fmt.Sprintf("waiting for %d %s: %s", len(pending), noun, strings.Join(parts, ", "))
}

func pendingNames(pending map[podRef]string) string {
	var names []string
	for r := range pending {
		names = append(names, "pods/"+r.name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
