package syncloop

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/runtimestate"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

type networkState struct{ err error }

func (n *networkState) NetworkErrors() error { return n.err }

// While the runtime's network is not ready a pod on the pod network is not
// started (NetworkNotReady event, "network is not ready" error, the runtime
// not asked to act), and a host-network pod is; once the network is ready
// the held pod is started. Matches the kubelet's syncPod.
func TestPodsOnThePodNetworkWaitForIt(t *testing.T) {
	ctx := context.Background()
	net := &networkState{err: runtimestate.ErrNetworkUnknown}
	rt := newFakeRuntime()
	rec := &events.FakeRecorder{}
	pm := podmanager.New()
	k := New(Options{Recorder: recorderWithForget{rec}, Network: net}, source.NewPodConfig(), pm, rt, &fakeCRI{})

	podNet := cachePod(types.UID("pod-net"))
	hostNet := cachePod(types.UID("host-net"))
	hostNet.Spec.HostNetwork = true
	for _, p := range []*v1.Pod{podNet, hostNet} {
		pm.AddPod(p)
		rt.setStatus(p.UID, &container.PodStatus{ID: p.UID, Name: p.Name, Namespace: p.Namespace})
	}

	if _, err := k.SyncPod(ctx, 0, podNet); err == nil || !strings.Contains(err.Error(), "network is not ready: network state unknown") {
		t.Fatalf("pod-network pod while the network is unknown: %v", err)
	}
	if n := len(rt.restartAll); n != 0 {
		t.Fatalf("the runtime was asked to sync %d times for a held pod", n)
	}
	if got := strings.Join(rec.Events(), "\n"); !strings.Contains(got, "Warning NetworkNotReady network is not ready: network state unknown") {
		t.Errorf("events %q, want NetworkNotReady", got)
	}
	if _, err := k.SyncPod(ctx, 0, hostNet); err != nil {
		t.Fatalf("host-network pod: %v", err)
	}
	if n := len(rt.restartAll); n != 1 {
		t.Fatalf("host-network pod: %d runtime syncs, want 1", n)
	}

	net.err = nil
	if _, err := k.SyncPod(ctx, 0, podNet); err != nil {
		t.Fatalf("pod-network pod once the network is ready: %v", err)
	}
	if n := len(rt.restartAll); n != 2 {
		t.Errorf("%d runtime syncs, want 2", n)
	}
}
