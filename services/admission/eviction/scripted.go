package eviction

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// ScriptedSource is a SummaryProvider whose observations are set by hand:
// tests (here and in integration tests elsewhere) script node pressure with
// it instead of exhausting a machine.
type ScriptedSource struct {
	mu    sync.Mutex
	obs   Observations
	err   error
	calls int
}

var _ SummaryProvider = (*ScriptedSource)(nil)

// Set makes every following Observe return obs (copied) and no error.
func (s *ScriptedSource) Set(obs Observations) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs = copyObservations(obs)
	s.err = nil
}

// Fail makes every following Observe return err until the next Set.
func (s *ScriptedSource) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Calls reports how many times Observe was called.
func (s *ScriptedSource) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Observe implements SummaryProvider.
func (s *ScriptedSource) Observe(context.Context) (Observations, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		return Observations{}, s.err
	}
	return copyObservations(s.obs), nil
}

// copyObservations copies the map and slices so a caller's later edits do
// not change what was observed.
func copyObservations(o Observations) Observations {
	out := Observations{Signals: maps.Clone(o.Signals), Pods: slices.Clone(o.Pods)}
	for i := range out.Pods {
		out.Pods[i].Containers = slices.Clone(out.Pods[i].Containers)
	}
	return out
}
