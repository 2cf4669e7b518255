package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"go.uber.org/zap"
)

// kubeletPodsInterval is how often the kubelet's /pods is read: a pod is
// marked running up to this much after its status said so (half of it on
// average), against the Watch's push for splitlet.
const kubeletPodsInterval = 100 * time.Millisecond

// kubeletPodsObserver marks pods running from the kubelet's /pods on its
// read-only port, the status point the standalone kubelet can report (it
// has no watch; GetPods puts the status manager's status into static
// pods). Running means what it means for splitlet's Watch (allRunning).
// It stops reading once every pod in want is marked, so that the polling
// costs the kubelet nothing after the burst.
type kubeletPodsObserver struct {
	url     string
	running *tracker
	podName func(string) string
}

func newKubeletPodsObserver(url string, podName func(string) string) *kubeletPodsObserver {
	return &kubeletPodsObserver{url: url, running: newTracker(), podName: podName}
}

func (o *kubeletPodsObserver) run(ctx context.Context, want []string) {
	t := time.NewTicker(kubeletPodsInterval)
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
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return fmt.Errorf("decode /pods: %w", err)
	}
	for i := range list.Items {
		if allRunning(&list.Items[i]) {
			o.running.mark(o.podName(list.Items[i].Name), now)
		}
	}
	return nil
}
