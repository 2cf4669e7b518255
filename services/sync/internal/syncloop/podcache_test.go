package syncloop

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

func cachePod(uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "default", UID: uid},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
}

// newCacheKubelet is a sync loop over rt whose PLEG lists cri.
func newCacheKubelet(rt Runtime, cri *fakeCRI) (*Kubelet, *podmanager.Manager) {
	pm := podmanager.New()
	return New(Options{}, source.NewPodConfig(), pm, rt, cri), pm
}

func TestSyncPodReadsTheRuntimeOnlyWhenNeeded(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	pod := cachePod(uid)
	for _, tc := range []struct {
		desc string
		// first is what the first sync's SyncPod reports; between runs
		// after it, before the second sync.
		first   kuberuntime.SyncResult
		between func(k *Kubelet, rt *fakeRuntime, cri *fakeCRI)
		// wantReads are the GetPodStatus calls of the first sync, then of
		// between and the second sync.
		wantReads [2]int
	}{
		{
			desc:      "a sync that did nothing leaves the next one a cached status",
			wantReads: [2]int{1, 0},
		},
		{
			desc:      "a sync that only changed a waiting reason reads once",
			first:     kuberuntime.SyncResult{WaitingChanged: true},
			wantReads: [2]int{1, 0},
		},
		{
			desc:      "a sync that acted reads again, and the next one uses that read",
			first:     kuberuntime.SyncResult{Acted: true},
			wantReads: [2]int{2, 0},
		},
		{
			desc: "a relist that saw a change while nothing ran refreshes the cache itself",
			between: func(k *Kubelet, rt *fakeRuntime, cri *fakeCRI) {
				rt.setStatus(uid, runningStatus(uid, container.ContainerStateExited))
				cri.Sandboxes = []*runtimeapi.PodSandbox{sb("sb-p", "p", runtimeapi.PodSandboxState_SANDBOX_READY)}
				cri.Containers = []*runtimeapi.Container{ctr("c-p", "p", runtimeapi.ContainerState_CONTAINER_EXITED)}
				k.pleg.Relist(ctx)
			},
			// The relist's read is the one between the syncs.
			wantReads: [2]int{1, 1},
		},
		{
			desc: "an invalidated entry makes the next sync read",
			between: func(k *Kubelet, _ *fakeRuntime, _ *fakeCRI) {
				k.statuses.cache.Invalidate(uid, time.Now())
			},
			wantReads: [2]int{1, 1},
		},
		{
			desc: "a container event's status is used without a read",
			// What the PLEG caches of an event (package pleg's
			// TestEventStatusIsCached).
			between: func(k *Kubelet, rt *fakeRuntime, _ *fakeCRI) {
				rt.setStatus(uid, runningStatus(uid, container.ContainerStateExited))
				k.statuses.cache.SetFromEvent(uid, rt.Status(uid), time.Now(), time.Now())
			},
			wantReads: [2]int{1, 0},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
			cri := &fakeCRI{}
			k, pm := newCacheKubelet(rt, cri)
			pm.AddPod(pod)
			rt.setResult(tc.first)
			if _, err := k.SyncPod(ctx, 0, pod); err != nil {
				t.Fatal(err)
			}
			if got := rt.readCount(); got != tc.wantReads[0] {
				t.Errorf("first sync read the runtime %d times, want %d", got, tc.wantReads[0])
			}
			rt.setResult(kuberuntime.SyncResult{})
			before := rt.readCount()
			if tc.between != nil {
				tc.between(k, rt, cri)
			}
			if _, err := k.SyncPod(ctx, 0, pod); err != nil {
				t.Fatal(err)
			}
			if got := rt.readCount() - before; got != tc.wantReads[1] {
				t.Errorf("second sync read the runtime %d times, want %d", got, tc.wantReads[1])
			}
			// Whatever its source, the second sync acts on the runtime's
			// latest state.
			want := rt.Status(uid).ContainerStatuses[0].State
			if got := rt.lastSynced().ContainerStatuses[0].State; got != want {
				t.Errorf("second sync saw container state %s, want %s", got, want)
			}
		})
	}
}
