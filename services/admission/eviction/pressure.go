package eviction

import (
	"context"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// PressureSource reports the node pressure conditions currently in force
// (v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure), in the
// order the eviction manager observed them. An empty result means no
// pressure. Implementations must be safe for concurrent use and must not
// block: admission calls it for every pod.
type PressureSource interface {
	NodeConditions(ctx context.Context) []v1.NodeConditionType
}

// StaticPressure is a PressureSource whose conditions are set by hand. It
// serves until the eviction manager exists, and in tests.
type StaticPressure struct {
	mu         sync.RWMutex
	conditions []v1.NodeConditionType
}

var _ PressureSource = (*StaticPressure)(nil)

// Set replaces the conditions in force.
func (s *StaticPressure) Set(conditions ...v1.NodeConditionType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conditions = slices.Clone(conditions)
}

// NodeConditions implements PressureSource.
func (s *StaticPressure) NodeConditions(context.Context) []v1.NodeConditionType {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.conditions)
}
