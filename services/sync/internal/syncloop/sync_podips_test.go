package syncloop

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// SyncPod hands the runtime the pod IPs of the pod's API status, so that a
// host-network pod's containers get the node's IPs as status.podIP(s); the
// status it read (possibly the cache's) is not changed.
func TestSyncPodGivesTheRuntimeTheAPIPodIPs(t *testing.T) {
	const uid = types.UID("p")
	nodeIPs := []string{"192.0.2.10", "2001:db8::10"}
	for _, tc := range []struct {
		desc        string
		hostNetwork bool
		runtimeIPs  []string
		want        []string
	}{
		{desc: "host network: the node's IPs", hostNetwork: true, want: nodeIPs},
		{desc: "pod network: the sandbox's IPs", runtimeIPs: []string{"10.88.0.7"}, want: []string{"10.88.0.7"}},
		{desc: "pod network without an IP yet: none", want: []string{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := newFakeRuntime()
			read := runningStatus(uid, container.ContainerStateRunning)
			read.IPs = tc.runtimeIPs
			rt.setStatus(uid, read)
			pm := podmanager.New()
			k := New(Options{HostIPs: nodeIPs}, source.NewPodConfig(), pm, rt, &fakeCRI{})
			pod := cachePod(uid)
			pod.Spec.HostNetwork = tc.hostNetwork
			pm.AddPod(pod)
			if _, err := k.SyncPod(context.Background(), 0, pod); err != nil {
				t.Fatal(err)
			}
			synced := rt.lastSynced()
			if !slices.Equal(synced.IPs, tc.want) {
				t.Errorf("runtime given IPs %q, want %q", synced.IPs, tc.want)
			}
			if !slices.Equal(read.IPs, tc.runtimeIPs) {
				t.Errorf("the status read was changed: IPs %q, want %q", read.IPs, tc.runtimeIPs)
			}
			if len(synced.ContainerStatuses) != 1 || synced.ContainerStatuses[0] != read.ContainerStatuses[0] {
				t.Errorf("runtime given containers %v, want the status read's", synced.ContainerStatuses)
			}
		})
	}
}
