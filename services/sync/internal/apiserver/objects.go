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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/logctx"
)

// DefaultObjectTTL is how long Objects serves a ConfigMap or Secret it read
// before reading it again. The kubelet's TTL-based managers use a minute (or
// the node's node.alpha.kubernetes.io/ttl annotation); a shorter one lets a
// change reach env and volumes sooner at the cost of one GET per object and
// pod sync.
const DefaultObjectTTL = 10 * time.Second

// ObjectsOptions configure Objects.
type ObjectsOptions struct {
	// TTL is how long a read object is served from the cache; zero means
	// DefaultObjectTTL.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Objects reads the ConfigMaps, Secrets and Services the pods' env and
// volumes refer to, and requests their service account tokens. ConfigMaps and Secrets are read with a GET and kept for
// a TTL, like the kubelet's TTL-based configMapManager and secretManager
// (cache_based_manager.go); Services come from an informer over every
// namespace, like the kubelet's serviceLister. Returned objects are shared
// with the cache: callers must not modify them.
type Objects struct {
	client kubernetes.Interface
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[objectKey]cachedObject
	tokens  map[tokenKey]*authenticationv1.TokenRequest

	services       corelisters.ServiceLister
	servicesSynced func() bool
	factory        informers.SharedInformerFactory
	// servicesForbidden is set when the API server refuses to list
	// Services: see ListServices.
	servicesForbidden atomic.Bool
}

var _ kuberuntime.ObjectGetter = (*Objects)(nil)

type objectKey struct {
	kind, namespace, name string
}

type cachedObject struct {
	obj     any // *v1.ConfigMap or *v1.Secret
	err     error
	fetched time.Time
}

// NewObjects returns Objects reading through client. Services are known
// once Run has read them.
func NewObjects(client kubernetes.Interface, opts ObjectsOptions) *Objects {
	if opts.TTL <= 0 {
		opts.TTL = DefaultObjectTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	svc := factory.Core().V1().Services()
	o := &Objects{
		client:         client,
		ttl:            opts.TTL,
		now:            opts.Now,
		entries:        map[objectKey]cachedObject{},
		tokens:         map[tokenKey]*authenticationv1.TokenRequest{},
		services:       svc.Lister(),
		servicesSynced: svc.Informer().HasSynced,
		factory:        factory,
	}
	// Cannot fail: the informer has not started.
	_ = svc.Informer().SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) && !o.servicesForbidden.Swap(true) {
			logctx.From(ctx).Error("the API server refuses to list Services: pods get no service variables (KUBERNETES_SERVICE_HOST...) until sync may list and watch services", zap.Error(err))
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return o
}

// Run watches Services until ctx ends.
func (o *Objects) Run(ctx context.Context) {
	o.factory.Start(ctx.Done())
	<-ctx.Done()
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
	obj, err := o.get(ctx, objectKey{"configmap", namespace, name}, func(ctx context.Context) (any, error) {
		return o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// GetSecret implements kuberuntime.ObjectGetter. A missing Secret's error
// reads `secret "name" not found`, the kubelet's message.
func (o *Objects) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := o.get(ctx, objectKey{"secret", namespace, name}, func(ctx context.Context) (any, error) {
		return o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// get serves key from the cache while it is fresh, else reads it. A found
// object and a NotFound are cached; any other error is not, so the next
// sync asks again.
func (o *Objects) get(ctx context.Context, key objectKey, read func(context.Context) (any, error)) (any, error) {
	now := o.now()
	o.mu.Lock()
	e, ok := o.entries[key]
	o.mu.Unlock()
	if ok && now.Sub(e.fetched) < o.ttl {
		return e.obj, e.err
	}
	obj, err := read(ctx)
	switch {
	case apierrors.IsNotFound(err):
		obj, err = nil, notFoundError{apierrors.NewNotFound(schema.GroupResource{Resource: key.kind}, key.name)}
	case err != nil:
		return nil, fmt.Errorf("get %s %s/%s: %w", key.kind, key.namespace, key.name, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries[key] = cachedObject{obj: obj, err: err, fetched: now}
	o.pruneLocked(now)
	return obj, err
}

// pruneLocked drops expired entries once the cache has grown, so that
// objects no pod refers to any more do not stay forever.
func (o *Objects) pruneLocked(now time.Time) {
	if len(o.entries) < 256 {
		return
	}
	for k, e := range o.entries {
		if now.Sub(e.fetched) >= o.ttl {
			delete(o.entries, k)
		}
	}
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
