package apiserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/status"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// PodStatusProvider is where the pod workers' statuses are published;
// podmanager.Manager is one. Subscribe's channel is closed when the
// subscriber falls behind; the caller re-lists with GetPodsWithStatus.
type PodStatusProvider interface {
	Subscribe(buffer int) (<-chan podmanager.Event, func())
	GetPodsWithStatus() []*v1.Pod
	GetPodByFullName(namespace, name string) *v1.Pod
}

var _ PodStatusProvider = (*podmanager.Manager)(nil)

// StatusOptions tune the StatusManager.
type StatusOptions struct {
	// SyncPeriod is how often pods whose write failed are retried (the
	// kubelet's syncPeriod, 10 s).
	SyncPeriod time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

// StatusManager writes the statuses of the API server source's pods back
// to the API server, and deletes deleted pods' objects once they have
// terminated. Run it, and register it as the SourceName Finalizer.
type StatusManager struct {
	client kubernetes.Interface
	pods   PodStatusProvider
	opts   StatusOptions

	mu sync.Mutex
	// dirty holds the latest pod (with status) of every pod whose status
	// has not been written yet: the kubelet's podStatusChannel plus its
	// periodic needsReconcile sweep, reduced to one set.
	dirty map[types.UID]*v1.Pod
	// failed holds the pods whose last write failed, until the next period.
	failed map[types.UID]*v1.Pod
	poke   chan struct{}
}

var _ syncloop.Finalizer = (*StatusManager)(nil)

// NewStatusManager returns a status manager reading statuses from pods.
func NewStatusManager(client kubernetes.Interface, pods PodStatusProvider, opts StatusOptions) *StatusManager {
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &StatusManager{
		client: client, pods: pods, opts: opts,
		dirty:  map[types.UID]*v1.Pod{},
		failed: map[types.UID]*v1.Pod{},
		poke:   make(chan struct{}, 1),
	}
}

// Run writes statuses until ctx ends.
func (m *StatusManager) Run(ctx context.Context) {
	events, cancel := m.pods.Subscribe(256)
	defer func() { cancel() }()
	m.relist()
	ticker := time.NewTicker(m.opts.SyncPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				// Fell behind: subscribe again and take every pod as dirty.
				events, cancel = m.pods.Subscribe(256)
				m.relist()
				continue
			}
			if ev.Type == podmanager.Deleted {
				m.forget(ev.Pod)
			} else {
				m.markDirty(ev.Pod)
			}
		case <-m.poke:
			m.SyncBatch(ctx)
		case <-ticker.C:
			m.retryFailed()
			m.SyncBatch(ctx)
		}
	}
}

func (m *StatusManager) relist() {
	for _, p := range m.pods.GetPodsWithStatus() {
		m.markDirty(p)
	}
}

// Requeue has pod's status written again, though it did not change: its
// API object was re-created (a static pod's new mirror).
func (m *StatusManager) Requeue(pod *v1.Pod) {
	if p := m.pods.GetPodByFullName(pod.Namespace, pod.Name); p != nil && p.UID == pod.UID {
		m.markDirty(p)
	}
}

// markDirty queues the status of a pod from the API server, or of a static
// pod (written to its mirror pod, as the kubelet's status manager does
// through TranslatePodUID).
func (m *StatusManager) markDirty(pod *v1.Pod) {
	if pod == nil || (pod.Annotations[defaults.ConfigSourceAnnotationKey] != SourceName && !IsStaticPod(pod)) {
		return
	}
	m.mu.Lock()
	m.dirty[pod.UID] = pod
	m.mu.Unlock()
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// forget drops a pod sync no longer has: its status is not retried. The
// kubelet's RemoveOrphanedStatuses.
func (m *StatusManager) forget(pod *v1.Pod) {
	if pod == nil {
		return
	}
	m.mu.Lock()
	delete(m.dirty, pod.UID)
	delete(m.failed, pod.UID)
	m.mu.Unlock()
}

// retryFailed makes the statuses that failed dirty again, once a period:
// a status the API server refuses is not retried on every other pod's
// change.
//
// The retry writes the pod's status as it is now, not the copy that
// failed: a newer status may have been written since, and the old one
// would undo it.
func (m *StatusManager) retryFailed() {
	m.mu.Lock()
	failed := maps.Clone(m.failed)
	clear(m.failed)
	m.mu.Unlock()
	for uid, pod := range failed {
		latest := m.pods.GetPodByFullName(pod.Namespace, pod.Name)
		if latest == nil || latest.UID != uid {
			continue
		}
		m.mu.Lock()
		if _, newer := m.dirty[uid]; !newer {
			m.dirty[uid] = latest
		}
		m.mu.Unlock()
	}
}

// SyncBatch writes every dirty status; those that fail are retried in the
// next period unless the pod changes first. Matches the kubelet status
// manager's syncBatch.
func (m *StatusManager) SyncBatch(ctx context.Context) {
	m.mu.Lock()
	batch := maps.Clone(m.dirty)
	clear(m.dirty)
	m.mu.Unlock()
	for uid, pod := range batch {
		err := m.syncPod(ctx, pod)
		if err == nil {
			m.mu.Lock()
			delete(m.failed, uid)
			m.mu.Unlock()
			continue
		}
		{
			if !errors.Is(err, errNoMirrorYet) {
				logctx.From(ctx).Info("pod status not written; retrying in the next period",
					zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
			}
			m.mu.Lock()
			if _, newer := m.dirty[uid]; !newer {
				m.failed[uid] = pod
			}
			m.mu.Unlock()
		}
	}
}

// syncPod writes pod.Status over the API server's status when they differ
// in anything the kubelet owns, retrying on conflict. A pod gone from the
// API server, or replaced by one with another UID, is skipped; a static
// pod's status goes to its mirror pod, skipped while there is none for the
// static pod's current manifest. Matches the
// kubelet status manager's syncPod (mergePodStatus, then an update of the
// status subresource; the kubelet patches, an update with the read
// resourceVersion gives the same result with conflict detection).
func (m *StatusManager) syncPod(ctx context.Context, pod *v1.Pod) error {
	pods := m.client.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if IsStaticPod(pod) {
				return errNoMirrorYet
			}
			return nil
		}
		if err != nil {
			return err
		}
		if IsStaticPod(pod) {
			if !isMirrorOf(cur, pod) {
				return errNoMirrorYet
			}
		} else if cur.UID != pod.UID {
			return nil
		}
		merged := status.MergePodStatus(cur.Status, pod.Status, false, m.opts.Now())
		if !status.NeedsUpdate(&cur.Status, &merged) {
			return nil
		}
		next := cur.DeepCopy()
		next.Status = merged
		_, err = pods.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		return err
	})
}

// errNoMirrorYet: a static pod's status waits for its mirror pod, and is
// written in the first period after the MirrorManager made it.
var errNoMirrorYet = errors.New("the static pod has no mirror pod yet")

// Finalize deletes the API object of a deleted pod whose containers have
// all stopped: its final status is written first, then the object is
// deleted with grace 0 and a UID precondition, so a pod re-created under
// the same name is never deleted. Matches the kubelet status manager's
// syncPod path for canBeDeleted pods.
func (m *StatusManager) Finalize(ctx context.Context, namespace, name string, uid types.UID) error {
	if p := m.pods.GetPodByFullName(namespace, name); p != nil && p.UID == uid {
		if err := m.syncPod(ctx, p); err != nil {
			return fmt.Errorf("final status of pod %s/%s: %w", namespace, name, err)
		}
	}
	zero := int64(0)
	err := m.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      metav1.NewUIDPreconditions(string(uid)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", namespace, name, err)
	}
	logctx.From(ctx).Info("pod deleted from the API server", zap.String("pod", namespace+"/"+name))
	return nil
}
