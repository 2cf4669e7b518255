package syncloop

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

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
		Sandboxes:  []*runtimeapi.PodSandbox{sb("sb-p", "p", runtimeapi.PodSandboxState_SANDBOX_READY)},
		Containers: []*runtimeapi.Container{ctr("c-p", "p", runtimeapi.ContainerState_CONTAINER_RUNNING)},
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
			before:    func(k *Kubelet) { k.pleg.Relist(ctx) },
			wantReads: 0,
		},
		{
			desc:      "a relist listed the pod before a source had it (sync restarted): read",
			inRuntime: true,
			before:    func(k *Kubelet) { k.pleg.Relist(ctx) },
			wantReads: 1,
		},
		{
			desc: "the pod's cache entry was invalidated: read",
			before: func(k *Kubelet) {
				k.pleg.Relist(ctx)
				k.statuses.cache.Invalidate(uid, time.Now())
			},
			wantReads: 1,
		},
		{
			desc: "the PLEG learned of the pod after the relist (an event): read",
			before: func(k *Kubelet) {
				k.pleg.Relist(ctx)
				k.pleg.Touch(uid, time.Now())
			},
			wantReads: 1,
		},
		{
			desc: "a pod of the same UID was forgotten after the relist: read",
			before: func(k *Kubelet) {
				k.pleg.Relist(ctx)
				k.statuses.forget(uid)
			},
			wantReads: 1,
		},
		{
			desc: "a relist after the forget listed nothing: no read",
			before: func(k *Kubelet) {
				k.statuses.forget(uid)
				// The relist must begin after the forget: wait for the
				// clock to move past it.
				for forgotBy := time.Now(); !time.Now().After(forgotBy); {
				}
				k.pleg.Relist(ctx)
			},
			wantReads: 0,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt, cri := newFakeRuntime(), &fakeCRI{}
			if tc.inRuntime {
				rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
				cri = running
			}
			k, pm := newCacheKubelet(rt, cri)
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

// After the first sync of a pod the runtime held nothing of creates it,
// the status is read from the objects the sync created, without listing;
// a sync that started from a real read, or failed, reads in full.
func TestStatusAfterCreatingANewPodIsReadWithoutListing(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	created := kuberuntime.SyncResult{Acted: true, Created: kuberuntime.PodObjects{SandboxIDs: []string{"sb-p"}, ContainerIDs: []string{"c-p"}}}
	for _, tc := range []struct {
		desc string
		// relisted runs a relist that saw nothing before the sync, which
		// lets the first sync start from an empty status.
		relisted bool
		// created is what SyncPod reports (default: the sandbox and
		// container by ID).
		created   *kuberuntime.SyncResult
		syncErr   error
		wantKnown [][]string
		wantReads int
	}{
		{desc: "new pod, created: its objects are read", relisted: true, wantKnown: [][]string{{"sb-p", "c-p"}}},
		{
			desc: "new pod, created, its sandbox's status handed back: the containers are read", relisted: true,
			created: &kuberuntime.SyncResult{Acted: true, Created: kuberuntime.PodObjects{
				Sandboxes: []*runtimeapi.PodSandboxStatus{{Id: "sb-p"}}, SandboxesReadAt: time.Now().Add(-time.Second), ContainerIDs: []string{"c-p"}}},
			wantKnown: [][]string{{"status:sb-p", "c-p"}},
		},
		{desc: "started from a real read: full read after", relisted: false, wantReads: 2},
		{desc: "the sync failed: full read after", relisted: true, syncErr: errors.New("StartContainer failed"), wantReads: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.syncErr = tc.syncErr
			if tc.created != nil {
				rt.setResult(*tc.created)
			} else {
				rt.setResult(created)
			}
			k, pm := newCacheKubelet(rt, &fakeCRI{})
			if tc.relisted {
				k.pleg.Relist(ctx)
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
			// A status built from a sandbox status read during the sync
			// is as old as that read.
			if tc.created != nil && len(tc.created.Created.Sandboxes) > 0 {
				if _, readAt, _ := k.statuses.cache.Get(uid); !readAt.Equal(tc.created.Created.SandboxesReadAt) {
					t.Errorf("cached status read at %v, want the sandbox's read at %v", readAt, tc.created.Created.SandboxesReadAt)
				}
			}
			// Either way the published status shows the running container.
			st, ok := pm.GetPodStatus(uid)
			if !ok || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil {
				t.Errorf("published status = %+v, want the container running", st.ContainerStatuses)
			}
		})
	}
}
