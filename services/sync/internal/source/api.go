package source

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/manifest"
	"github.com/splitlet/splitlet/services/sync/internal/validation"
)

// PodStore persists the API source's pods. *store.Store implements it.
// Put must store all pods or none.
type PodStore interface {
	Put(pods ...*v1.Pod) error
	Delete(namespace, name string) error
	List() ([]*v1.Pod, error)
}

// ApplyAction says what Apply did with one pod.
type ApplyAction int

const (
	Created ApplyAction = iota + 1
	Configured
	Unchanged
)

// AppliedPod reports one pod of an Apply.
type AppliedPod struct {
	Pod    *v1.Pod
	Action ApplyAction
}

// APISource holds the pods applied through the PodService API. It plays the
// API server's part for them: it defaults and validates on create and update
// (ValidatePodUpdate), assigns UIDs, marks deletions, and forgets a pod once
// its termination is complete. It is safe for concurrent use.
type APISource struct {
	store    PodStore
	cfg      *PodConfig
	nodeName string
	now      func() time.Time

	mu   sync.Mutex
	pods map[string]*v1.Pod // namespace/name
}

// NewAPISource loads the stored pods and reports them to cfg. A stored pod
// that no longer decodes is skipped and returned in the error alongside a
// usable source.
func NewAPISource(ctx context.Context, st PodStore, nodeName string, cfg *PodConfig) (*APISource, error) {
	a := &APISource{store: st, cfg: cfg, nodeName: nodeName, now: time.Now, pods: map[string]*v1.Pod{}}
	pods, err := st.List()
	for _, p := range pods {
		a.pods[p.Namespace+"/"+p.Name] = p
	}
	a.publish(ctx)
	return a, err
}

// publish sends the current set to the mux. The lock is held across the copy
// and Set, so concurrent publishes reach the mux in the order of the sets they
// copied: an older copy recorded after a newer one would remove the pods the
// newer one added. Set does not wait for the sync loop, so holding the lock
// is cheap.
func (a *APISource) publish(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	pods := make([]*v1.Pod, 0, len(a.pods))
	for _, p := range a.pods {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	a.cfg.Set(ctx, APISourceName, pods)
}

// Apply creates or updates the pods of a manifest. Everything is decoded,
// defaulted and validated first; on any error nothing is applied and the
// error, wrapping errdefs.ErrInvalidArgument, names the document (counted
// from 0) and the field path. An update may change only what the API server
// lets a pod update change (ValidatePodUpdate: images, some metadata, ...).
func (a *APISource) Apply(ctx context.Context, data []byte, dryRun bool) ([]AppliedPod, error) {
	result, changed, err := a.apply(data, dryRun)
	if err != nil {
		return nil, err
	}
	if changed {
		a.publish(ctx)
	}
	return result, nil
}

// apply does Apply's work under the lock and reports whether the set changed.
func (a *APISource) apply(data []byte, dryRun bool) ([]AppliedPod, bool, error) {
	pods, err := manifest.Decode(data)
	if err != nil {
		return nil, false, err
	}
	if len(pods) == 0 {
		return nil, false, fmt.Errorf("the manifest holds no pod: %w", errdefs.ErrInvalidArgument)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	result := make([]AppliedPod, 0, len(pods))
	seen := map[string]int{}
	for i, pod := range pods {
		defaults.SetDefaults_Pod(pod)
		if pod.Spec.NodeName == "" {
			pod.Spec.NodeName = a.nodeName
		}
		key := pod.Namespace + "/" + pod.Name
		if j, dup := seen[key]; dup {
			return nil, false, fmt.Errorf("document %d: metadata.name: Duplicate value: %q (also in document %d): %w", i, pod.Name, j, errdefs.ErrInvalidArgument)
		}
		seen[key] = i
		old, exists := a.pods[key]
		if !exists {
			// The API server assigns the UID, ignoring one in the manifest.
			pod.UID = newUID()
			pod.CreationTimestamp = metav1.NewTime(a.now().Truncate(time.Second))
			pod.Status = v1.PodStatus{Phase: v1.PodPending}
			if err := validation.AsError(validation.ValidatePod(pod)); err != nil {
				return nil, false, fmt.Errorf("document %d: %w", i, err)
			}
			result = append(result, AppliedPod{Pod: pod, Action: Created})
			continue
		}
		if old.DeletionTimestamp != nil {
			return nil, false, fmt.Errorf("document %d: pod %s is being deleted, apply it again once it is gone: %w", i, key, errdefs.ErrConflict)
		}
		if pod.UID == "" {
			pod.UID = old.UID
		}
		pod.CreationTimestamp = old.CreationTimestamp
		pod.ResourceVersion = old.ResourceVersion
		pod.Status = old.Status
		if ann, ok := old.Annotations[defaults.ConfigSourceAnnotationKey]; ok {
			// The mux added it; it is not the user's change.
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[defaults.ConfigSourceAnnotationKey] = ann
		}
		if err := validation.AsError(validation.ValidatePodUpdate(pod, old)); err != nil {
			return nil, false, fmt.Errorf("document %d: %w (delete the pod and apply it again to change it)", i, err)
		}
		action := Configured
		if equality.Semantic.DeepEqual(pod.Spec, old.Spec) && equality.Semantic.DeepEqual(pod.Labels, old.Labels) &&
			equality.Semantic.DeepEqual(pod.Annotations, old.Annotations) {
			action = Unchanged
			pod = old
		}
		result = append(result, AppliedPod{Pod: pod, Action: action})
	}
	if dryRun {
		return result, false, nil
	}
	var changed []*v1.Pod
	for _, r := range result {
		if r.Action != Unchanged {
			changed = append(changed, r.Pod)
		}
	}
	if len(changed) > 0 {
		if err := a.store.Put(changed...); err != nil {
			return nil, false, fmt.Errorf("persist pods: %w", err)
		}
		for _, p := range changed {
			a.pods[p.Namespace+"/"+p.Name] = p
		}
	}
	return result, len(changed) > 0, nil
}

// Delete starts the graceful deletion of a pod: it gets a deletion timestamp
// and a deletion grace period (gracePeriod, else its
// terminationGracePeriodSeconds), which may only shrink on a repeated delete,
// as in the API server. The pod stays listed until Finalize.
func (a *APISource) Delete(ctx context.Context, namespace, name string, gracePeriod *int64) (*v1.Pod, error) {
	a.mu.Lock()
	key := namespace + "/" + name
	old, ok := a.pods[key]
	if !ok {
		a.mu.Unlock()
		return nil, fmt.Errorf("pod %s: %w", key, errdefs.ErrNotFound)
	}
	grace := int64(defaultGracePeriod)
	if old.Spec.TerminationGracePeriodSeconds != nil {
		grace = *old.Spec.TerminationGracePeriodSeconds
	}
	if gracePeriod != nil {
		if *gracePeriod < 0 {
			a.mu.Unlock()
			return nil, fmt.Errorf("grace period %d: must not be negative: %w", *gracePeriod, errdefs.ErrInvalidArgument)
		}
		grace = *gracePeriod
	}
	if old.DeletionGracePeriodSeconds != nil && *old.DeletionGracePeriodSeconds <= grace {
		a.mu.Unlock()
		return old.DeepCopy(), nil
	}
	pod := old.DeepCopy()
	if pod.DeletionTimestamp == nil {
		ts := metav1.NewTime(a.now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		pod.DeletionTimestamp = &ts
	}
	pod.DeletionGracePeriodSeconds = &grace
	if err := a.store.Put(pod); err != nil {
		a.mu.Unlock()
		return nil, fmt.Errorf("persist deletion: %w", err)
	}
	a.pods[key] = pod
	a.mu.Unlock()
	a.publish(ctx)
	return pod.DeepCopy(), nil
}

// Finalize forgets a pod whose deletion has completed (its containers and
// sandbox are stopped). A pod not being deleted, or with another UID (it was
// deleted and applied again meanwhile), is left alone.
func (a *APISource) Finalize(ctx context.Context, namespace, name string, uid types.UID) error {
	a.mu.Lock()
	key := namespace + "/" + name
	p, ok := a.pods[key]
	if !ok || p.UID != uid || p.DeletionTimestamp == nil {
		a.mu.Unlock()
		return nil
	}
	if err := a.store.Delete(namespace, name); err != nil {
		a.mu.Unlock()
		return fmt.Errorf("forget pod %s: %w", key, err)
	}
	delete(a.pods, key)
	a.mu.Unlock()
	a.publish(ctx)
	return nil
}

// defaultGracePeriod is the API server's default terminationGracePeriodSeconds.
const defaultGracePeriod = 30

// newUID returns a random RFC 4122 version 4 UUID, the form the API server
// gives pod UIDs.
func newUID() types.UID {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(errors.New("crypto/rand failed: " + err.Error()))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}
