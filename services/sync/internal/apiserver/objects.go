package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// DefaultObjectIdleTimeout is how long Objects keeps watching a ConfigMap
// or Secret that nothing asked for: pods being synced ask for their
// volumes' objects on every sync, so only objects no running pod mounts
// (env only, or pods gone) are let go. The kubelet stops a watch when the
// last pod referring to the object is unregistered.
const DefaultObjectIdleTimeout = 10 * time.Minute

// objectSyncTimeout bounds the wait for a new watch's first list; the
// kubelet's watch-based manager waits a second, then fails the pod sync.
const objectSyncTimeout = 5 * time.Second

// ObjectsOptions configure Objects.
type ObjectsOptions struct {
	// IdleTimeout is how long an object nothing asks for stays watched;
	// zero means DefaultObjectIdleTimeout.
	IdleTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Objects reads the ConfigMaps, Secrets and Services the pods' env and
// volumes refer to and the RuntimeClasses they run with, and requests
// their service account tokens. Each
// ConfigMap and Secret asked for is watched from the first request on (a
// list and watch of that one name), and served from that watch's cache,
// like the kubelet's default watch-based configMapManager and
// secretManager (watch_based_manager.go); Services come from an informer
// over every namespace, like the kubelet's serviceLister, and
// RuntimeClasses from one over every class, like the kubelet's
// runtimeclass.Manager. Returned objects
// are shared with the caches: callers must not modify them.
type Objects struct {
	client      kubernetes.Interface
	idleTimeout time.Duration
	now         func() time.Time
	// base is the context of the per-object watches; stop ends them.
	base context.Context
	stop context.CancelFunc

	mu      sync.Mutex
	watches map[objectKey]*objectWatch
	tokens  map[tokenKey]*authenticationv1.TokenRequest

	services       corelisters.ServiceLister
	servicesSynced func() bool
	factory        informers.SharedInformerFactory
	// servicesForbidden is set when the API server refuses to list
	// Services: see ListServices.
	servicesForbidden atomic.Bool

	runtimeClasses       nodelisters.RuntimeClassLister
	runtimeClassesSynced func() bool
}

var (
	_ kuberuntime.ObjectGetter   = (*Objects)(nil)
	_ kuberuntime.RuntimeClasses = (*Objects)(nil)
)

type objectKey struct {
	kind, namespace, name string
}

// NewObjects returns Objects reading through client. Services are known
// once Run has read them.
func NewObjects(client kubernetes.Interface, opts ObjectsOptions) *Objects {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultObjectIdleTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	svc := factory.Core().V1().Services()
	rc := factory.Node().V1().RuntimeClasses()
	base, stop := context.WithCancel(context.Background())
	o := &Objects{
		client:         client,
		idleTimeout:    opts.IdleTimeout,
		now:            opts.Now,
		base:           base,
		stop:           stop,
		watches:        map[objectKey]*objectWatch{},
		tokens:         map[tokenKey]*authenticationv1.TokenRequest{},
		services:       svc.Lister(),
		servicesSynced: svc.Informer().HasSynced,
		factory:        factory,

		runtimeClasses:       rc.Lister(),
		runtimeClassesSynced: rc.Informer().HasSynced,
	}
	// Cannot fail: the informer has not started.
	_ = svc.Informer().SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) && !o.servicesForbidden.Swap(true) {
			logctx.From(ctx).Error("the API server refuses to list Services: pods get no service variables (KUBERNETES_SERVICE_HOST...) until sync may list and watch services", zap.Error(err))
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	_ = rc.Informer().SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			logctx.From(ctx).Error("the API server refuses to list RuntimeClasses: pods naming a runtimeClassName cannot start until sync may list and watch runtimeclasses.node.k8s.io", zap.Error(err))
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return o
}

// Run watches Services until ctx ends, then stops every watch.
func (o *Objects) Run(ctx context.Context) {
	o.factory.Start(ctx.Done())
	<-ctx.Done()
	o.stop()
	o.factory.Shutdown()
}

// notFoundError is the API server's NotFound error, also matching
// errdefs.ErrNotFound, as kuberuntime.ObjectGetter asks.
type notFoundError struct{ err error }

func (e notFoundError) Error() string   { return e.err.Error() }
func (e notFoundError) Unwrap() []error { return []error{e.err, errdefs.ErrNotFound} }

// GetConfigMap implements kuberuntime.ObjectGetter. A missing ConfigMap's
// error reads `configmap "name" not found`, the kubelet's message.
func (o *Objects) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := o.get(ctx, objectKey{"configmap", namespace, name}, func() cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(o.client, namespace, 0, cache.Indexers{}, nameSelector(name))
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// GetSecret implements kuberuntime.ObjectGetter. A missing Secret's error
// reads `secret "name" not found`, the kubelet's message.
func (o *Objects) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := o.get(ctx, objectKey{"secret", namespace, name}, func() cache.SharedIndexInformer {
		return coreinformers.NewFilteredSecretInformer(o.client, namespace, 0, cache.Indexers{}, nameSelector(name))
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// nameSelector narrows a list or watch to one object, as the kubelet's
// watch-based manager does.
func nameSelector(name string) func(*metav1.ListOptions) {
	return func(opts *metav1.ListOptions) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
}

// objectWatch is the watch of one ConfigMap or Secret.
type objectWatch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	lastUsed time.Time
	// lastErr is the watch's latest list or watch error, for the message
	// when its first list does not complete.
	lastErr atomic.Pointer[error]
}

// get serves key from its watch, starting the watch on the first request
// and waiting up to objectSyncTimeout for its first list. Watches nothing
// asked for within the idle timeout are stopped.
func (o *Objects) get(ctx context.Context, key objectKey, newInformer func() cache.SharedIndexInformer) (any, error) {
	now := o.now()
	o.mu.Lock()
	w := o.watches[key]
	if w == nil {
		wctx, cancel := context.WithCancel(o.base)
		w = &objectWatch{informer: newInformer(), cancel: cancel}
		_ = w.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			w.lastErr.Store(&err)
			cache.DefaultWatchErrorHandler(ctx, r, err)
		})
		o.watches[key] = w
		go w.informer.RunWithContext(wctx)
	}
	w.lastUsed = now
	for k, other := range o.watches {
		if now.Sub(other.lastUsed) > o.idleTimeout {
			other.cancel()
			delete(o.watches, k)
		}
	}
	o.mu.Unlock()

	if !w.informer.HasSynced() {
		wctx, cancel := context.WithTimeout(ctx, objectSyncTimeout)
		synced := cache.WaitForCacheSync(wctx.Done(), w.informer.HasSynced)
		cancel()
		if !synced {
			cause := errors.New("timed out waiting for the condition")
			if e := w.lastErr.Load(); e != nil {
				cause = *e
			}
			return nil, fmt.Errorf("%w: failed to sync %s cache: %w", errdefs.ErrUnavailable, key.kind, cause)
		}
	}
	obj, exists, err := w.informer.GetStore().GetByKey(key.namespace + "/" + key.name)
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", key.kind, key.namespace, key.name, err)
	}
	if !exists {
		return nil, notFoundError{apierrors.NewNotFound(schema.GroupResource{Resource: key.kind}, key.name)}
	}
	return obj, nil
}

// errServicesNotSynced says the Services were not read once yet.
var errServicesNotSynced = fmt.Errorf("%w: services not yet listed from the API server", errdefs.ErrUnavailable)

// ListServices implements kuberuntime.ObjectGetter from the informer's
// cache. Where sync may not list Services (RBAC without the Node
// authorizer's grant) there are none, and an error is logged once: the
// kubelet would wait for them forever and start no pod from the API
// server.
func (o *Objects) ListServices(_ context.Context, namespace string) ([]*v1.Service, error) {
	if !o.servicesSynced() {
		if o.servicesForbidden.Load() {
			return nil, nil
		}
		return nil, errServicesNotSynced
	}
	svcs, err := o.services.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil, errors.Join(errdefs.ErrUnavailable, err)
	}
	return svcs, nil
}

// tokenMaxTTL is the age at which the kubelet's token manager replaces a
// token whatever its expiry.
const tokenMaxTTL = 24 * time.Hour

type tokenKey struct {
	namespace, name, audiences string
	expirationSeconds          int64
	boundUID                   string
}

func keyOfToken(namespace, name string, req *authenticationv1.TokenRequest) tokenKey {
	k := tokenKey{namespace: namespace, name: name, audiences: fmt.Sprint(req.Spec.Audiences)}
	if req.Spec.ExpirationSeconds != nil {
		k.expirationSeconds = *req.Spec.ExpirationSeconds
	}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		k.boundUID = string(ref.UID)
	}
	return k
}

// GetServiceAccountToken implements kuberuntime.ObjectGetter: the
// kubelet's token manager GetServiceAccountToken. A cached token is served
// until requiresRefresh says otherwise; when a refresh fails, a cached
// token that has not expired is served still.
func (o *Objects) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := keyOfToken(namespace, name, req)
	o.mu.Lock()
	cached := o.tokens[key]
	o.mu.Unlock()
	now := o.now()
	if cached != nil && !requiresRefresh(cached, now) {
		return cached, nil
	}
	tr, err := o.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		if cached != nil && now.Before(cached.Status.ExpirationTimestamp.Time) {
			return cached, nil
		}
		return nil, fmt.Errorf("request a token for service account %s/%s: %w", namespace, name, err)
	}
	if tr.Spec.ExpirationSeconds == nil {
		// The API server always sets it; the refresh rule needs it.
		secs := int64(tr.Status.ExpirationTimestamp.Sub(now).Seconds())
		tr.Spec.ExpirationSeconds = &secs
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tokens[key] = tr
	for k, t := range o.tokens {
		if now.After(t.Status.ExpirationTimestamp.Time) {
			delete(o.tokens, k)
		}
	}
	return tr, nil
}

// requiresRefresh matches the kubelet's token manager (without its jitter):
// a token is replaced once 80% of its lifetime has passed, or once it is a
// day old.
func requiresRefresh(tr *authenticationv1.TokenRequest, now time.Time) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	iat := exp.Add(-ttl)
	return now.After(iat.Add(tokenMaxTTL)) || now.After(exp.Add(-ttl/5))
}
