// Package runtimestate keeps what the runtime last said of its network,
// as the kubelet's runtimeState does: sync asks CRI Status every
// UpdatePeriod (the kubelet's updateRuntimeUp, run every 5 s) and a pod
// that needs the pod network is not started while the network is not
// ready (the kubelet's syncPod: "network is not ready", event
// NetworkNotReady). Host-network pods are not held.
package runtimestate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// UpdatePeriod is how often the runtime is asked (the kubelet's 5 s).
const UpdatePeriod = 5 * time.Second

// ErrNetworkUnknown is the network's state before the runtime first
// answered, as the kubelet's.
var ErrNetworkUnknown = errors.New("network state unknown")

// State is the runtime's last word on its network. Safe for concurrent
// use.
type State struct {
	runtime runtimeapi.RuntimeServiceClient

	mu         sync.RWMutex
	networkErr error
}

// New returns a State that asks rt; until it first answers the network is
// unknown (not ready).
func New(rt runtimeapi.RuntimeServiceClient) *State {
	return &State{runtime: rt, networkErr: ErrNetworkUnknown}
}

// NetworkErrors is why the pod network is not ready, or nil.
func (s *State) NetworkErrors() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.networkErr
}

// Run asks the runtime now and every UpdatePeriod until ctx ends.
func (s *State) Run(ctx context.Context) {
	t := time.NewTicker(UpdatePeriod)
	defer t.Stop()
	for {
		s.Update(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Update asks the runtime once. A failed call changes nothing: the last
// answer stands, as in the kubelet's updateRuntimeUp.
func (s *State) Update(ctx context.Context) {
	resp, err := s.runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		logctx.From(ctx).Debug("container runtime status check failed", zap.Error(err))
		return
	}
	_, networkErr := Errors(resp.GetStatus())
	s.mu.Lock()
	s.networkErr = networkErr
	s.mu.Unlock()
}

// Errors reads a CRI status as the kubelet's updateRuntimeUp does: the
// runtime's and the network's readiness, each nil when its condition is
// there and true.
func Errors(st *runtimeapi.RuntimeStatus) (runtimeErr, networkErr error) {
	return conditionError(st, runtimeapi.RuntimeReady, "container runtime not ready"),
		conditionError(st, runtimeapi.NetworkReady, "container runtime network not ready")
}

func conditionError(st *runtimeapi.RuntimeStatus, t, what string) error {
	for _, c := range st.GetConditions() {
		if c.GetType() != t {
			continue
		}
		if c.GetStatus() {
			return nil
		}
		return fmt.Errorf("%s: %s=%t reason:%s message:%s", what, c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
	}
	return fmt.Errorf("%s: %s condition missing", what, t)
}
