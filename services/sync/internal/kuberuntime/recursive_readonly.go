package kuberuntime

import (
	"context"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeHandlersTTL is how long the runtime handlers of a CRI Status
// answer are used before asking again: the kubelet's runtime state takes
// them from the Status call of its updateRuntimeUp, every 5 s.
const runtimeHandlersTTL = 5 * time.Second

// runtimeHandlers returns the handlers the runtime reported in its latest
// Status, asking again once runtimeHandlersTTL has passed. Only pods with a
// recursiveReadOnly mount ask, so a node without them makes no call.
func (m *Manager) runtimeHandlers(ctx context.Context) ([]*runtimeapi.RuntimeHandler, error) {
	m.mu.Lock()
	if !m.handlersAt.IsZero() && time.Since(m.handlersAt) < runtimeHandlersTTL {
		defer m.mu.Unlock()
		return m.handlers, nil
	}
	m.mu.Unlock()
	resp, err := m.runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers, m.handlersAt = resp.GetRuntimeHandlers(), time.Now()
	return m.handlers, nil
}

// SupportsRecursiveReadOnlyMounts says whether the runtime handler of the
// pod's RuntimeClass supports recursive read-only mounts, as the runtime
// last reported: the kubelet's runtimeClassSupportsRecursiveReadOnlyMounts
// and runtimeHandlerSupportsRecursiveReadOnlyMounts. A class or runtime
// status that cannot be read, a runtime that reports no handlers (before
// CRI v1.30, containerd 1.6) and an unknown handler all say no. Without an
// API server the pod's handler is the default one ("") and its support is
// what the runtime says; a standalone kubelet, having no RuntimeClass
// manager, says no for every pod.
func (m *Manager) SupportsRecursiveReadOnlyMounts(ctx context.Context, pod *v1.Pod) bool {
	log := loggerFrom(ctx)
	name := ""
	if m.opts.RuntimeClasses != nil {
		var err error
		if name, err = m.opts.RuntimeClasses.LookupRuntimeHandler(ctx, pod.Spec.RuntimeClassName); err != nil {
			log.Error("failed to look up the runtime handler", zap.Stringp("runtimeClassName", pod.Spec.RuntimeClassName), zap.Error(err))
			return false
		}
	}
	handlers, err := m.runtimeHandlers(ctx)
	if err != nil {
		log.Error("failed to read the runtime's handlers", zap.Error(err))
		return false
	}
	if len(handlers) == 0 {
		return false
	}
	for _, h := range handlers {
		if h.GetName() == name {
			return h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}
	log.Error("unknown runtime handler", zap.String("runtimeHandlerName", name))
	return false
}
