package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/splitlet/splitlet/internal/logctx"
	"go.uber.org/zap"
)

// kubeletPodsInterval is how often the kubelet's /pods is read at n pods
// unless Config.KubeletPodsInterval says: 1 ms per pod, at least 100 ms.
// A pod is marked running up to one interval after its status said so
// (half of it on average), against the Watch's push for splitlet. Each
// read makes the kubelet copy and encode every pod and the harness decode
// them, on the cores both share, so the interval grows with the answer:
// read every 100 ms in a 1000-pod burst, the harness used 53 s of CPU
// and the kubelet 80 s, against 5 s and 54 s read every second.
func kubeletPodsInterval(cfg Config, n int) time.Duration {
	if cfg.KubeletPodsInterval != 0 {
		return cfg.KubeletPodsInterval
	}
	return max(100*time.Millisecond, time.Duration(n)*time.Millisecond)
}

// kubeletPodsObserver marks pods running from the kubelet's /pods on its
// read-only port, the status point the standalone kubelet can report (it
// has no watch; GetPods puts the status manager's status into static
// pods). Running means what it means for splitlet's Watch (allRunning).
// It stops reading once every pod in want is marked, so that reading
// costs the kubelet nothing after the burst.
type kubeletPodsObserver struct {
	url      string
	interval time.Duration
	running  *tracker
	podName  func(string) string
}

func newKubeletPodsObserver(url string, interval time.Duration, podName func(string) string) *kubeletPodsObserver {
	return &kubeletPodsObserver{url: url, interval: interval, running: newTracker(), podName: podName}
}

func (o *kubeletPodsObserver) run(ctx context.Context, want []string) {
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for o.running.count(want) < len(want) {
		if err := o.poll(ctx); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Warn("kubelet /pods", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poll reads /pods once and marks the pods whose containers all run, at
// the time the answer arrived.
func (o *kubeletPodsObserver) poll(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := httpGet(rctx, o.url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	now := time.Now()
	var list podList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return fmt.Errorf("decode /pods: %w", err)
	}
	for i := range list.Items {
		if p := &list.Items[i]; p.allRunning() {
			o.running.mark(o.podName(p.Metadata.Name), now)
		}
	}
	return nil
}

// podList is the part of /pods' v1.PodList the observer reads; the rest
// is skipped, not decoded, since the harness shares the cores.
type podList struct {
	Items []podListItem `json:"items"`
}

type podListItem struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct{} `json:"containers"`
	} `json:"spec"`
	Status struct {
		ContainerStatuses []struct {
			State struct {
				Running *struct{} `json:"running"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// allRunning is allRunning's rule on the decoded part: a status for every
// container of the spec, each running.
func (p *podListItem) allRunning() bool {
	want := len(p.Spec.Containers)
	if want == 0 || len(p.Status.ContainerStatuses) < want {
		return false
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.State.Running == nil {
			return false
		}
	}
	return true
}
