package source

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/splitlet/splitlet/internal/logctx"
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
//
// A change goes through three steps: validate against the current pods and
// claim the pods' names (under mu), persist (without mu, so concurrent
// changes share the store's commits), then record and publish (under mu).
// A claimed name is busy: another change to it waits until the first is
// recorded or has failed, so each change is validated against the result of
// the one before, and the mux receives a pod's changes in the order they
// were made. Changes to different pods do not wait for each other.
type APISource struct {
	store    PodStore
	cfg      *PodConfig
	nodeName string
	now      func() time.Time
	// apiObjects says an API server serves configMaps, secrets and
	// tokens; without one a pod referencing them is refused at Apply.
	apiObjects bool
	// policy, when set, refuses new pods the node would refuse to start
	// (SetPolicy).
	policy PolicyCheck

	mu   sync.Mutex
	pods map[string]*v1.Pod // namespace/name
	busy map[string]bool    // names claimed by a change being persisted
	// idle is signalled (with mu) whenever names stop being busy.
	idle *sync.Cond
}

// NewAPISource loads the stored pods and reports them to cfg. A stored pod
// that no longer decodes is skipped and returned in the error alongside a
// usable source.
func NewAPISource(ctx context.Context, st PodStore, nodeName string, cfg *PodConfig) (*APISource, error) {
	a := &APISource{store: st, cfg: cfg, nodeName: nodeName, now: time.Now, pods: map[string]*v1.Pod{}, busy: map[string]bool{}}
	a.idle = sync.NewCond(&a.mu)
	pods, err := st.List()
	for _, p := range pods {
		a.pods[p.Namespace+"/"+p.Name] = p
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	// The one full report: it makes the source count for SeenAllSources.
	// Later changes are merged pod by pod.
	cfg.Set(ctx, APISourceName, pods)
	return a, err
}

// SetAPIObjects says whether an API server serves the configMaps,
// secrets and service-account tokens pods reference (sync has
// --kubeconfig). Without one (the default) Apply refuses a pod that
// references them, naming the field, before anything starts. Call it
// before the PodService serves.
func (a *APISource) SetAPIObjects(available bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.apiObjects = available
}

// PolicyCheck returns the fields of pod the node refuses (policycheck);
// err means it could not tell.
type PolicyCheck func(ctx context.Context, pod *v1.Pod) (field.ErrorList, error)

// SetPolicy makes Apply refuse a new pod check refuses, naming the
// fields, before anything of it is stored or started.
func (a *APISource) SetPolicy(check PolicyCheck) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policy = check
}

// checkPolicy runs the policy check on the pods not yet known: an update
// cannot change what the policy looks at (ValidatePodUpdate). When the
// check cannot be made (the gateway is away) the pod is accepted: the
// gateway refuses it again when its sandbox or containers are created.
func (a *APISource) checkPolicy(ctx context.Context, pods []*v1.Pod, keys []string) error {
	a.mu.Lock()
	check := a.policy
	var fresh []int
	for i, key := range keys {
		if _, known := a.pods[key]; !known {
			fresh = append(fresh, i)
		}
	}
	a.mu.Unlock()
	if check == nil {
		return nil
	}
	for _, i := range fresh {
		errs, err := check(ctx, pods[i])
		if err != nil {
			logctx.From(ctx).Warn("the node's policy could not be asked; the pod is accepted, and checked again when it starts",
				zap.String("pod", keys[i]), zap.Error(err))
		}
		if len(errs) > 0 {
			return fmt.Errorf("document %d: %s: %w", i, errs.ToAggregate(), errdefs.ErrPermissionDenied)
		}
	}
	return nil
}

// claimLocked waits until none of keys is busy, then marks them busy. It
// takes them all at once, so two changes claiming overlapping names cannot
// each hold one the other waits for. a.mu must be held.
func (a *APISource) claimLocked(keys ...string) {
	for slices.ContainsFunc(keys, func(k string) bool { return a.busy[k] }) {
		a.idle.Wait()
	}
	for _, k := range keys {
		a.busy[k] = true
	}
}

// releaseLocked ends a claim. a.mu must be held.
func (a *APISource) releaseLocked(keys ...string) {
	for _, k := range keys {
		delete(a.busy, k)
	}
	a.idle.Broadcast()
}

// Apply creates or updates the pods of a manifest. Everything is decoded,
// defaulted and validated first; on any error nothing is applied and the
// error, wrapping errdefs.ErrInvalidArgument, names the document (counted
// from 0) and the field path. An update may change only what the API server
// lets a pod update change (ValidatePodUpdate: images, some metadata, ...).
// The changed pods are on disk when it returns, and handed to the mux.
func (a *APISource) Apply(ctx context.Context, data []byte, dryRun bool) ([]AppliedPod, error) {
	pods, err := manifest.Decode(data)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("the manifest holds no pod: %w", errdefs.ErrInvalidArgument)
	}
	keys := make([]string, 0, len(pods))
	seen := make(map[string]int, len(pods))
	for i, pod := range pods {
		defaults.SetDefaults_Pod(pod)
		key := pod.Namespace + "/" + pod.Name
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("document %d: metadata.name: Duplicate value: %q (also in document %d): %w", i, pod.Name, j, errdefs.ErrInvalidArgument)
		}
		seen[key] = i
		keys = append(keys, key)
	}

	if err := a.checkPolicy(ctx, pods, keys); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.claimLocked(keys...)
	result, err := a.validateLocked(pods, keys)
	var changed []*v1.Pod
	for _, r := range result {
		if r.Action != Unchanged {
			changed = append(changed, r.Pod)
		}
	}
	if err != nil || dryRun || len(changed) == 0 {
		a.releaseLocked(keys...)
		a.mu.Unlock()
		return result, err
	}
	a.mu.Unlock()

	// The names are claimed, so nothing can change these pods meanwhile.
	err = a.store.Put(changed...)

	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.releaseLocked(keys...)
	if err != nil {
		return nil, fmt.Errorf("persist pods: %w", err)
	}
	for _, p := range changed {
		a.pods[p.Namespace+"/"+p.Name] = p
	}
	// Under mu, in the critical section that recorded the change, so the
	// mux sees changes in the order they were recorded. The mux tells an
	// added pod from an updated one itself.
	a.cfg.Merge(ctx, APISourceName, ADD, changed)
	return result, nil
}

// validateLocked defaults and validates the decoded pods (keys[i] is
// pods[i]'s namespace/name) against the current set, as the API server's
// create and update do. a.mu must be held.
func (a *APISource) validateLocked(pods []*v1.Pod, keys []string) ([]AppliedPod, error) {
	result := make([]AppliedPod, 0, len(pods))
	for i, pod := range pods {
		if pod.Spec.NodeName == "" {
			pod.Spec.NodeName = a.nodeName
		}
		key := keys[i]
		old, exists := a.pods[key]
		if !exists {
			// The API server assigns the UID, ignoring one in the manifest.
			pod.UID = newUID()
			pod.CreationTimestamp = metav1.NewTime(a.now().Truncate(time.Second))
			pod.Status = v1.PodStatus{Phase: v1.PodPending}
			errs := validation.ValidatePod(pod)
			if !a.apiObjects {
				errs = append(errs, validation.ValidateNoAPIObjects(pod)...)
			}
			if err := validation.AsError(errs); err != nil {
				return nil, fmt.Errorf("document %d: %w", i, err)
			}
			result = append(result, AppliedPod{Pod: pod, Action: Created})
			continue
		}
		if old.DeletionTimestamp != nil {
			return nil, fmt.Errorf("document %d: pod %s is being deleted, apply it again once it is gone: %w", i, key, errdefs.ErrConflict)
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
			return nil, fmt.Errorf("document %d: %w (delete the pod and apply it again to change it)", i, err)
		}
		action := Configured
		if equality.Semantic.DeepEqual(pod.Spec, old.Spec) && equality.Semantic.DeepEqual(pod.Labels, old.Labels) &&
			equality.Semantic.DeepEqual(pod.Annotations, old.Annotations) {
			action = Unchanged
			pod = old
		}
		result = append(result, AppliedPod{Pod: pod, Action: action})
	}
	return result, nil
}

// Delete starts the graceful deletion of a pod: it gets a deletion timestamp
// and a deletion grace period (gracePeriod, else its
// terminationGracePeriodSeconds), which may only shrink on a repeated delete,
// as in the API server. The pod stays listed until Finalize.
func (a *APISource) Delete(ctx context.Context, namespace, name string, gracePeriod *int64) (*v1.Pod, error) {
	key := namespace + "/" + name
	a.mu.Lock()
	a.claimLocked(key)
	old, ok := a.pods[key]
	if !ok {
		a.releaseLocked(key)
		a.mu.Unlock()
		return nil, fmt.Errorf("pod %s: %w", key, errdefs.ErrNotFound)
	}
	grace := int64(defaultGracePeriod)
	if old.Spec.TerminationGracePeriodSeconds != nil {
		grace = *old.Spec.TerminationGracePeriodSeconds
	}
	if gracePeriod != nil {
		if *gracePeriod < 0 {
			a.releaseLocked(key)
			a.mu.Unlock()
			return nil, fmt.Errorf("grace period %d: must not be negative: %w", *gracePeriod, errdefs.ErrInvalidArgument)
		}
		grace = *gracePeriod
	}
	if old.DeletionGracePeriodSeconds != nil && *old.DeletionGracePeriodSeconds <= grace {
		a.releaseLocked(key)
		a.mu.Unlock()
		return old.DeepCopy(), nil
	}
	pod := old.DeepCopy()
	if pod.DeletionTimestamp == nil {
		ts := metav1.NewTime(a.now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		pod.DeletionTimestamp = &ts
	}
	pod.DeletionGracePeriodSeconds = &grace
	a.mu.Unlock()

	err := a.store.Put(pod)

	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.releaseLocked(key)
	if err != nil {
		return nil, fmt.Errorf("persist deletion: %w", err)
	}
	a.pods[key] = pod
	a.cfg.Merge(ctx, APISourceName, DELETE, []*v1.Pod{pod})
	return pod.DeepCopy(), nil
}

// Finalize forgets a pod whose deletion has completed (its containers and
// sandbox are stopped). A pod not being deleted, or with another UID (it was
// deleted and applied again meanwhile), is left alone.
func (a *APISource) Finalize(ctx context.Context, namespace, name string, uid types.UID) error {
	key := namespace + "/" + name
	a.mu.Lock()
	a.claimLocked(key)
	p, ok := a.pods[key]
	if !ok || p.UID != uid || p.DeletionTimestamp == nil {
		a.releaseLocked(key)
		a.mu.Unlock()
		return nil
	}
	a.mu.Unlock()

	err := a.store.Delete(namespace, name)

	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.releaseLocked(key)
	if err != nil {
		return fmt.Errorf("forget pod %s: %w", key, err)
	}
	delete(a.pods, key)
	a.cfg.Merge(ctx, APISourceName, REMOVE, []*v1.Pod{p})
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
