package apiserver

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// IsStaticPod says whether pod came from a manifest file or URL: the pods
// the kubelet makes mirror pods for (kubetypes.IsStaticPod). Pods applied
// through sync's own PodService are not mirrored.
func IsStaticPod(pod *v1.Pod) bool {
	switch pod.Annotations[defaults.ConfigSourceAnnotationKey] {
	case source.FileSourceName, source.HTTPSourceName:
		return true
	}
	return false
}

// IsMirrorPod says whether pod is a mirror pod: the API server's copy of a
// static pod, which a node shows but never runs.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[defaults.ConfigMirrorAnnotationKey]
	return ok
}

// isMirrorOf says whether mirror stands for static as it is now: its
// mirror annotation holds the static pod's hash (the kubelet's
// podManager.IsMirrorPodOf).
func isMirrorOf(mirror, static *v1.Pod) bool {
	hash, ok := mirror.Annotations[defaults.ConfigMirrorAnnotationKey]
	return ok && hash != "" && hash == static.Annotations[defaults.ConfigHashAnnotationKey]
}

// MirrorManager keeps one mirror pod in the API server for each static pod
// of the node, so that the cluster sees them (kubectl get pods, the
// scheduler's accounting): created when missing (also after someone
// deleted it), replaced when the static pod's manifest changed, and
// deleted once the static pod is gone. It is the part of the kubelet's
// syncPod that reconciles mirror pods plus HandlePodCleanups' deletion of
// orphaned ones, with the kubelet's mirror client (CreateMirrorPod,
// DeleteMirrorPod) beneath: the mirror carries the static pod's
// annotations, kubernetes.io/config.mirror set to its hash, and an owner
// reference to the Node.
type MirrorManager struct {
	client kubernetes.Interface
	node   string
	pods   PodStatusProvider
	period time.Duration
	// created is told of each static pod whose mirror was just made, so
	// that its status is written to the new object.
	created func(static *v1.Pod)

	mu sync.Mutex
	// mirrors are the node's mirror pods as the API source last listed
	// them, by namespace/name; nil until the first list.
	mirrors map[string]*v1.Pod
	poke    chan struct{}
}

// NewMirrorManager returns a MirrorManager for node's static pods, which
// pods publishes. Feed it the API source's mirror pods (SetMirrors) and Run
// it. created (may be nil) is called with each static pod whose mirror it
// made: StatusManager.Requeue, so that a re-created mirror gets the status
// at once, as the kubelet's status manager's needsReconcile sweep does.
func NewMirrorManager(client kubernetes.Interface, node string, pods PodStatusProvider, created func(static *v1.Pod)) *MirrorManager {
	if created == nil {
		created = func(*v1.Pod) {}
	}
	return &MirrorManager{client: client, node: node, pods: pods, period: 10 * time.Second, created: created, poke: make(chan struct{}, 1)}
}

// SetMirrors records the node's mirror pods, as listed by the API source.
func (m *MirrorManager) SetMirrors(mirrors []*v1.Pod) {
	byName := make(map[string]*v1.Pod, len(mirrors))
	for _, p := range mirrors {
		byName[p.Namespace+"/"+p.Name] = p
	}
	m.mu.Lock()
	m.mirrors = byName
	m.mu.Unlock()
	m.wake()
}

func (m *MirrorManager) wake() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// Run reconciles when a static pod comes or goes, when the mirror pods change,
// and once a period (a failed call is retried then), until ctx ends.
func (m *MirrorManager) Run(ctx context.Context) {
	events, cancel := m.pods.Subscribe(64)
	defer func() { cancel() }()
	ticker := time.NewTicker(m.period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events, cancel = m.pods.Subscribe(64)
			} else if ev.Type == podmanager.Modified || ev.Pod == nil || !IsStaticPod(ev.Pod) {
				// A status change moves no mirror (the StatusManager
				// writes it); a changed manifest is a new pod UID, so
				// it arrives as Added and Deleted.
				continue
			}
		case <-m.poke:
		case <-ticker.C:
		}
		if err := m.Reconcile(ctx); err != nil {
			logctx.From(ctx).Info("mirror pods not reconciled; retrying in the next period", zap.Error(err))
		}
	}
}

// Reconcile makes the API server's mirror pods match the static pods once.
// Before the API source's first list it does nothing: an empty set would
// read as "no mirror pod" and create duplicates' conflicts.
func (m *MirrorManager) Reconcile(ctx context.Context) error {
	m.mu.Lock()
	if m.mirrors == nil {
		m.mu.Unlock()
		return nil
	}
	mirrors := maps.Clone(m.mirrors)
	m.mu.Unlock()

	var errs []error
	statics := map[string]bool{}
	for _, pod := range m.pods.GetPodsWithStatus() {
		if !IsStaticPod(pod) {
			continue
		}
		name := pod.Namespace + "/" + pod.Name
		statics[name] = true
		mirror := mirrors[name]
		if mirror != nil && (mirror.DeletionTimestamp != nil || !isMirrorOf(mirror, pod)) {
			// Being deleted (a graceful delete, which no node would
			// ever finish for a mirror), or another manifest's mirror:
			// the kubelet deletes it at once, then creates the right
			// one once the list no longer holds it.
			if err := m.deleteMirror(ctx, mirror); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if mirror == nil {
			if err := m.createMirror(ctx, pod); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for name, mirror := range mirrors {
		if !statics[name] && IsMirrorPod(mirror) {
			if err := m.deleteMirror(ctx, mirror); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d mirror pod calls failed, first: %w", len(errs), errs[0])
	}
	return nil
}

// createMirror creates static's mirror pod: the kubelet's
// basicMirrorClient.CreateMirrorPod. A mirror that already exists for the
// same hash is success; a Node being deleted gets none.
func (m *MirrorManager) createMirror(ctx context.Context, static *v1.Pod) error {
	node, err := m.client.CoreV1().Nodes().Get(ctx, m.node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("mirror pod of %s/%s: read node: %w", static.Namespace, static.Name, err)
	}
	if node.DeletionTimestamp != nil {
		return nil
	}
	hash := static.Annotations[defaults.ConfigHashAnnotationKey]
	mirror := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      maps.Clone(static.Labels),
			Annotations: maps.Clone(static.Annotations),
			// A controller reference without blockOwnerDeletion, which
			// NodeRestriction demands of a node's mirror pods.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: new(true),
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	mirror.Annotations[defaults.ConfigMirrorAnnotationKey] = hash
	_, err = m.client.CoreV1().Pods(static.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, getErr := m.client.CoreV1().Pods(static.Namespace).Get(ctx, static.Name, metav1.GetOptions{})
		if getErr == nil && isMirrorOf(cur, static) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("create mirror pod %s/%s: %w", static.Namespace, static.Name, err)
	}
	logctx.From(ctx).Info("mirror pod created", zap.String("pod", static.Namespace+"/"+static.Name))
	m.created(static)
	return nil
}

// deleteMirror deletes a mirror pod with grace 0 and its UID as a
// precondition, so a newer pod of the same name is never hit: the
// kubelet's basicMirrorClient.DeleteMirrorPod.
func (m *MirrorManager) deleteMirror(ctx context.Context, mirror *v1.Pod) error {
	zero := int64(0)
	err := m.client.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      metav1.NewUIDPreconditions(string(mirror.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete mirror pod %s/%s: %w", mirror.Namespace, mirror.Name, err)
	}
	logctx.From(ctx).Info("mirror pod deleted", zap.String("pod", mirror.Namespace+"/"+mirror.Name))
	return nil
}
