package syncloop

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
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
				// The relist must begin after the forget: wait for the
				// clock to move past it.
				for forgotBy := time.Now(); !time.Now().After(forgotBy); {
				}
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

// knownStatusRuntime is a statusRuntime that can read given objects'
// statuses (GetPodStatusOf) and whose SyncPod may fail.
type knownStatusRuntime struct {
	*statusRuntime
	syncErr    error
	knownReads [][]string
}

func (f *knownStatusRuntime) SyncPodWithResult(ctx context.Context, pod *v1.Pod, ps *container.PodStatus, probes kuberuntime.ProbeResults, restartAll bool) (kuberuntime.SyncResult, error) {
	res, _ := f.statusRuntime.SyncPodWithResult(ctx, pod, ps, probes, restartAll)
	return res, f.syncErr
}

func (f *knownStatusRuntime) GetPodStatusOf(_ context.Context, uid types.UID, _, _ string, sandboxIDs, containerIDs []string) (*container.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.knownReads = append(f.knownReads, append(append([]string(nil), sandboxIDs...), containerIDs...))
	return f.status[uid], nil
}

// After the first sync of a pod the runtime held nothing of creates it,
// the status is read from the objects the sync created, without listing;
// a sync that started from a real read, or failed, reads in full.
func TestStatusAfterCreatingANewPodIsReadWithoutListing(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	created := kuberuntime.SyncResult{Acted: true, CreatedSandbox: "sb-p", CreatedContainers: []string{"c-p"}}
	for _, tc := range []struct {
		desc string
		// relisted runs a relist that saw nothing before the sync, which
		// lets the first sync start from an empty status.
		relisted  bool
		syncErr   error
		wantKnown [][]string
		wantReads int
	}{
		{desc: "new pod, created: its objects are read", relisted: true, wantKnown: [][]string{{"sb-p", "c-p"}}},
		{desc: "started from a real read: full read after", relisted: false, wantReads: 2},
		{desc: "the sync failed: full read after", relisted: true, syncErr: errors.New("StartContainer failed"), wantReads: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := &knownStatusRuntime{statusRuntime: newStatusRuntime(), syncErr: tc.syncErr}
			rt.setResult(created)
			k, pm := newCacheKubelet(rt)
			if tc.relisted {
				k.pleg.relist(ctx)
			}
			pod := cachePod(uid)
			pm.AddPod(pod)
			// What the runtime holds once the sync created the pod.
			rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
			_, err := k.SyncPod(ctx, 0, pod)
			if (err != nil) != (tc.syncErr != nil) {
				t.Fatalf("SyncPod error = %v, want %v", err, tc.syncErr)
			}
			if !reflect.DeepEqual(rt.knownReads, tc.wantKnown) || rt.readCount() != tc.wantReads {
				t.Errorf("reads: by IDs %v, full %d; want %v, %d", rt.knownReads, rt.readCount(), tc.wantKnown, tc.wantReads)
			}
			// Either way the published status shows the running container.
			st, ok := pm.GetPodStatus(uid)
			if !ok || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil {
				t.Errorf("published status = %+v, want the container running", st.ContainerStatuses)
			}
		})
	}
}
