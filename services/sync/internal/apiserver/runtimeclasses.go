package apiserver

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// errRuntimeClassesNotSynced is LookupRuntimeHandler's error while the
// RuntimeClasses were never read: the pod's sandbox waits for a later sync.
var errRuntimeClassesNotSynced = fmt.Errorf("%w: RuntimeClasses not yet read from the API server", errdefs.ErrUnavailable)

// LookupRuntimeHandler implements kuberuntime.RuntimeClasses: the
// kubelet's runtimeclass.Manager.LookupRuntimeHandler. No name (or "") is
// the default class, the runtime's default handler. Unlike the kubelet's,
// whose lister answers NotFound until its informer has listed, a lookup
// before the first list waits for it up to objectSyncTimeout, so that a
// RuntimeClass that exists is not reported missing just after a restart.
func (o *Objects) LookupRuntimeHandler(ctx context.Context, name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	if !o.runtimeClassesSynced() {
		wctx, cancel := context.WithTimeout(ctx, objectSyncTimeout)
		synced := cache.WaitForCacheSync(wctx.Done(), o.runtimeClassesSynced)
		cancel()
		if !synced {
			return "", errRuntimeClassesNotSynced
		}
	}
	rc, err := o.runtimeClasses.Get(*name)
	if apierrors.IsNotFound(err) {
		return "", notFoundError{err}
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", *name, err)
	}
	return rc.Handler, nil
}
