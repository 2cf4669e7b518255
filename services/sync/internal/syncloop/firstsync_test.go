package syncloop

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// The first sync of a pod starts from an empty status without reading the
// runtime only when a complete relist proved the runtime holds nothing of
// it; otherwise it reads, so a pod already running (sync restarted) is not
// created twice.
func TestFirstSyncReadsOnlyWhenTheRuntimeMayHoldThePod(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	running := &fakeCRI{
		sandboxes:  []*runtimeapi.PodSandbox{sb("sb-p", "p", runtimeapi.PodSandboxState_SANDBOX_READY)},
		containers: []*runtimeapi.Container{ctr("c-p", "p", runtimeapi.ContainerState_CONTAINER_RUNNING)},
	}
	for _, tc := range []struct {
		desc string
		// inRuntime says the runtime runs the pod already.
		inRuntime bool
		// before runs before the pod's first sync.
		before func(k *Kubelet)
		// wantReads is the GetPodStatus calls of the first sync (it acts
		// nothing, so it does not read after).
		wantReads int
	}{
		{
			desc:      "no relist has completed yet: read",
			inRuntime: true,
			wantReads: 1,
		},
		{
			desc:      "a relist listed nothing of the pod: empty status, no read",
			before:    func(k *Kubelet) { k.pleg.relist(ctx) },
			wantReads: 0,
		},
		{
			desc:      "a relist listed the pod before a source had it (sync restarted): read",
			inRuntime: true,
			before:    func(k *Kubelet) { k.pleg.relist(ctx) },
			wantReads: 1,
		},
		{
			desc: "the pod's cache entry was invalidated: read",
			before: func(k *Kubelet) {
				k.pleg.relist(ctx)
				k.cache.Invalidate(uid, time.Now())
			},
			wantReads: 1,
		},
		{
			desc: "an event named the pod after the relist: read",
			before: func(k *Kubelet) {
				k.pleg.relist(ctx)
				k.pleg.queueEvent(uid, &runtimeapi.ContainerEventResponse{CreatedAt: time.Now().UnixNano()})
			},
			wantReads: 1,
		},
		{
			desc: "a pod of the same UID was forgotten after the relist: read",
			before: func(k *Kubelet) {
				k.pleg.relist(ctx)
				k.forgetPodStatus(uid)
			},
			wantReads: 1,
		},
		{
			desc: "a relist after the forget listed nothing: no read",
			before: func(k *Kubelet) {
				k.forgetPodStatus(uid)
				time.Sleep(time.Millisecond)
				k.pleg.relist(ctx)
			},
			wantReads: 0,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := newStatusRuntime()
			k, pm := newCacheKubelet(rt)
			if tc.inRuntime {
				rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
				k.pleg.rt = running
			}
			if tc.before != nil {
				tc.before(k)
			}
			pod := cachePod(uid)
			pm.AddPod(pod)
			if _, err := k.SyncPod(ctx, 0, pod); err != nil {
				t.Fatal(err)
			}
			if got := rt.readCount(); got != tc.wantReads {
				t.Errorf("first sync read the runtime %d times, want %d", got, tc.wantReads)
			}
			// The sync acted on what the runtime holds: a running pod's
			// sandbox, so nothing is created twice; else nothing.
			synced := rt.lastSynced()
			if got := len(synced.SandboxStatuses) > 0; got != tc.inRuntime {
				t.Errorf("first sync saw a sandbox: %v, want %v", got, tc.inRuntime)
			}
		})
	}
}
