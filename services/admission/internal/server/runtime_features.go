package server

import (
	"context"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
)

// runtimeFeaturesPeriod is how often the runtime's features are read: the
// period of the kubelet's updateRuntimeUp, which sets them on its node.
const runtimeFeaturesPeriod = 5 * time.Second

// featureSource reads what the runtime supports; *podstats.CRI is one.
type featureSource interface {
	NodeFeatures(ctx context.Context) (*v1.NodeFeatures, error)
}

// watchRuntimeFeatures sets the node's features from src now and every
// period until ctx ends, as the kubelet's updateRuntimeUp keeps its node's
// (NodeFeatures setter): a failed read, or a runtime that reports no
// features, leaves them as they were. Until the first read succeeds the
// node keeps the features it was built with (none supported), so a pod
// asking for supplementalGroupsPolicy Strict is refused, as by a kubelet
// whose runtime has not answered yet.
func watchRuntimeFeatures(ctx context.Context, src featureSource, period time.Duration, set func(*v1.NodeFeatures) bool, log *zap.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		f, err := src.NodeFeatures(ctx)
		switch {
		case err != nil:
			log.Debug("reading the runtime's features", zap.Error(err))
		case f != nil && set(f):
			log.Info("the runtime's features changed",
				zap.Bool("supplementalGroupsPolicy", f.SupplementalGroupsPolicy != nil && *f.SupplementalGroupsPolicy))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
