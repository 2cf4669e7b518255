package apiserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	ndftypes "k8s.io/component-helpers/nodedeclaredfeatures/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/nodelabels"
)

func report(context.Context) (NodeReport, error) {
	return NodeReport{
		Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3500m"), v1.ResourcePods: resource.MustParse("110")},
		Conditions: []v1.NodeCondition{
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue, Reason: "KubeletHasInsufficientMemory"},
			// Ready is splitlet's to report, not admission's.
			{Type: v1.NodeReady, Status: v1.ConditionFalse},
		},
	}, nil
}

func findNodeCondition(n *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	return findCondition(n.Status.Conditions, t)
}

// With --register-with-taints="" the Node has no taint, so any pod may be
// scheduled onto it (as a kubelet's, the conformance suite's precondition).
func TestRegisterWithoutTaints(t *testing.T) {
	client := fake.NewClientset()
	if err := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: report}).Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 0 {
		t.Errorf("taints %v, want none", n.Spec.Taints)
	}
}

// The node controllers write a new Node at once (pod CIDR, taints): a
// status write that meets their change must not fail the registration,
// which would then wait for its retry (seen on a two-node cluster).
func TestRegisterCreatedNodeChangedMeanwhile(t *testing.T) {
	client := fake.NewClientset()
	updates := 0
	client.PrependReactor("update", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		updates++
		return true, nil, apierrors.NewConflict(v1.Resource("nodes"), "n1", errors.New("the object has been modified"))
	})
	if err := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: report}).Register(t.Context()); err != nil {
		t.Fatalf("Register: %v (%d updates refused as conflicts)", err, updates)
	}
	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := findNodeCondition(n, v1.NodeMemoryPressure); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("conditions %v, want the report's MemoryPressure written", n.Status.Conditions)
	}
}

func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		existing *v1.Node
	}{
		{desc: "new node created"},
		{desc: "existing node adopted, its labels and taints kept", existing: &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"keep": "me"}},
			Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "other", Effect: v1.TaintEffectNoExecute}}},
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var objs []runtime.Object
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			client := fake.NewClientset(objs...)
			r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Labels: map[string]string{"zone": "z"}, Report: report, Taints: []v1.Taint{Taint}})
			if err := r.Register(t.Context()); err != nil {
				t.Fatalf("Register: %v", err)
			}
			// Registering twice must not duplicate the taint.
			if err := r.Register(t.Context()); err != nil {
				t.Fatalf("second Register: %v", err)
			}
			n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n.Labels[v1.LabelHostname] != "n1" || n.Labels["zone"] != "z" {
				t.Errorf("labels %v", n.Labels)
			}
			// One node object: the labels admission judges pods by, for a
			// node named n1 with the same --node-labels.
			want := nodelabels.Labels("n1", map[string]string{"zone": "z"})
			if tc.existing != nil {
				want["keep"] = "me"
			}
			if !maps.Equal(n.Labels, want) {
				t.Errorf("labels %v, want admission's %v", n.Labels, want)
			}
			if tc.existing != nil && n.Labels["keep"] != "me" {
				t.Errorf("existing label lost: %v", n.Labels)
			}
			count := 0
			for _, taint := range n.Spec.Taints {
				if taint == Taint {
					count++
				}
			}
			if count != 1 {
				t.Errorf("taints %v: want splitlet's taint once", n.Spec.Taints)
			}
			if tc.existing != nil && len(n.Spec.Taints) != 2 {
				t.Errorf("taints %v: existing taint lost", n.Spec.Taints)
			}
			if got := n.Status.Allocatable[v1.ResourceCPU]; got.Cmp(resource.MustParse("3500m")) != 0 {
				t.Errorf("allocatable cpu %s", got.String())
			}
			if len(n.Status.Conditions) == 0 || n.Status.Conditions[0].Type != v1.NodeReady ||
				n.Status.Conditions[0].Status != v1.ConditionTrue || n.Status.Conditions[0].Reason != "SplitletReady" {
				t.Errorf("conditions %+v, want Ready=True SplitletReady", n.Status.Conditions)
			}
			if c := findNodeCondition(n, v1.NodeMemoryPressure); c == nil || c.Status != v1.ConditionTrue || c.LastHeartbeatTime.IsZero() {
				t.Errorf("conditions %+v, want admission's MemoryPressure=True with a heartbeat", n.Status.Conditions)
			}
			if len(n.Status.Conditions) != 2 {
				t.Errorf("conditions %+v, want Ready and MemoryPressure once each", n.Status.Conditions)
			}
		})
	}
}

func TestUpdateStatusKeepsReadyTransitionTime(t *testing.T) {
	client := fake.NewClientset()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Now: func() time.Time { return now }})
	if err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := now
	now = now.Add(time.Minute)
	if err := r.UpdateStatus(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, _ := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	c := n.Status.Conditions[0]
	if !c.LastHeartbeatTime.Time.Equal(now) {
		t.Errorf("heartbeat %v, want %v", c.LastHeartbeatTime, now)
	}
	if !c.LastTransitionTime.Time.Equal(first) {
		t.Errorf("transition %v, want %v (Ready did not change)", c.LastTransitionTime, first)
	}
}

func TestRenewLease(t *testing.T) {
	client := fake.NewClientset()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Now: func() time.Time { return now }})
	if err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.RenewLease(t.Context()); err != nil {
		t.Fatalf("create lease: %v", err)
	}
	now = now.Add(10 * time.Second)
	if err := r.RenewLease(t.Context()); err != nil {
		t.Fatalf("renew lease: %v", err)
	}
	l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(now) {
		t.Errorf("renew time %v, want %v", l.Spec.RenewTime, now)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "n1" || len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" {
		t.Errorf("lease %+v: want holder n1 owned by its Node", l)
	}
}

func TestUpdateStatusWithoutReportKeepsLastKnown(t *testing.T) {
	client := fake.NewClientset()
	fail := false
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: func(ctx context.Context) (NodeReport, error) {
		if fail {
			return NodeReport{}, errors.New("admission unreachable")
		}
		return report(ctx)
	}})
	if err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	fail = true
	if err := r.UpdateStatus(t.Context()); err != nil {
		t.Fatalf("UpdateStatus with the report failing: %v", err)
	}
	n, _ := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if got := n.Status.Capacity[v1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("capacity cpu %s, want the last known 4", got.String())
	}
	if c := findNodeCondition(n, v1.NodeMemoryPressure); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("conditions %+v: last known MemoryPressure lost", n.Status.Conditions)
	}
	if c := findNodeCondition(n, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("conditions %+v: want Ready=True", n.Status.Conditions)
	}
}

// TestNodeAPIEndpoint: the Node carries the node API's port and the
// addresses the API server reaches it by, on registration and on every
// status update (an adopted Node may carry another agent's).
func TestNodeAPIEndpoint(t *testing.T) {
	stale := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{
		Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.9.9.9"}},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
	}}
	for _, tc := range []struct {
		desc     string
		existing *v1.Node
		ips      []string
		hostname string
		port     int32
		want     []v1.NodeAddress
	}{
		{desc: "node IPs as InternalIPs, then the hostname", ips: []string{"10.0.0.5", "fd00::5"}, hostname: "host-a", port: 10350,
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00::5"}, {Type: v1.NodeHostName, Address: "host-a"}}},
		{desc: "an adopted node's stale endpoint is replaced", existing: stale, ips: []string{"127.0.0.1"}, port: 43210,
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}}},
		{desc: "no node API: port 0", existing: stale, hostname: "host-a",
			want: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "host-a"}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var objs []runtime.Object
			if tc.existing != nil {
				objs = append(objs, tc.existing.DeepCopy())
			}
			client := fake.NewClientset(objs...)
			r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Addresses: NodeAddresses(tc.ips, tc.hostname), KubeletPort: tc.port})
			if err := r.Register(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := r.UpdateStatus(t.Context()); err != nil {
				t.Fatal(err)
			}
			n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; got != tc.port {
				t.Errorf("kubelet endpoint port %d, want %d", got, tc.port)
			}
			if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(tc.want) {
				t.Errorf("addresses %v, want %v", n.Status.Addresses, tc.want)
			}
		})
	}
}

// fakeRuntime is a CRI runtime whose network comes up once it is given a
// pod CIDR, as containerd's with a CNI config template.
type fakeRuntime struct {
	mu        sync.Mutex
	podCIDRs  []string // every UpdateRuntimeConfig
	statusErr error
}

func (f *fakeRuntime) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	network := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if len(f.podCIDRs) == 0 {
		network = &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady",
			Message: "Network plugin returns error: cni plugin not initialized"}
	}
	return &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true}, network}},
		// As containerd 2.x answers.
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{
			{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
			// A handler whose runtime cannot make recursive read-only mounts.
			{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: false, UserNamespaces: true}},
		},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}, nil
}

func (f *fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest, ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "1.6.20~ds1"}, nil
}

func (f *fakeRuntime) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest, _ ...grpc.CallOption) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.podCIDRs = append(f.podCIDRs, req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr())
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

func (f *fakeRuntime) setStatusErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusErr = err
}

func (f *fakeRuntime) handedOver() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.podCIDRs)
}

func readyOf(t *testing.T, client *fake.Clientset, name string) v1.NodeCondition {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := findNodeCondition(n, v1.NodeReady)
	if c == nil {
		t.Fatalf("node %s has no Ready condition: %+v", name, n.Status.Conditions)
	}
	return *c
}

// The node is NotReady, with the kubelet's message, until the runtime's
// network is up; the pod CIDR the controller manager gives the Node is
// handed to the runtime once (UpdateRuntimeConfig, comma-joined), and
// the fast status update posts Ready as soon as the network comes up.
func TestPodCIDRToRuntimeAndNetworkReadiness(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	rt := &fakeRuntime{}
	clock := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: report, Runtime: rt, Now: func() time.Time { return clock }})
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	ready := readyOf(t, client, "n1")
	want := "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	if ready.Status != v1.ConditionFalse || ready.Reason != "KubeletNotReady" || ready.Message != want {
		t.Fatalf("Ready before the pod CIDR = %s %s %q, want False KubeletNotReady %q", ready.Status, ready.Reason, ready.Message, want)
	}
	if got := rt.handedOver(); len(got) != 0 {
		t.Fatalf("pod CIDR handed over before the Node had one: %v", got)
	}

	// kube-controller-manager's node IPAM.
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.1.0/24", []string{"10.244.1.0/24", "fd00:10:244:1::/64"}
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Second)
	r.fastStatusUpdate(ctx)
	ready = readyOf(t, client, "n1")
	if ready.Status != v1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(clock) {
		t.Fatalf("Ready after the pod CIDR = %s at %v (%q), want True at %v", ready.Status, ready.LastTransitionTime, ready.Message, clock)
	}
	if got, want := rt.handedOver(), []string{"10.244.1.0/24,fd00:10:244:1::/64"}; !slices.Equal(got, want) {
		t.Fatalf("UpdateRuntimeConfig calls %v, want %v", got, want)
	}
	// Later status updates do not hand the same CIDR over again.
	if err := r.UpdateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rt.handedOver(); len(got) != 1 {
		t.Errorf("UpdateRuntimeConfig calls %v after another status update, want one", got)
	}
}

// A runtime that stops answering keeps the node Ready for the kubelet's
// 30 s (a gateway restart must not flap the node), then makes it NotReady.
func TestRuntimeDownMakesNodeNotReadyAfterThreshold(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	rt := &fakeRuntime{podCIDRs: []string{"10.244.0.0/24"}}
	clock := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: report, Runtime: rt, Now: func() time.Time { return clock }})
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if c := readyOf(t, client, "n1"); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready = %s %q, want True", c.Status, c.Message)
	}
	rt.setStatusErr(errors.New("connection refused"))
	clock = clock.Add(runtimeSyncThreshold - time.Second)
	if err := r.UpdateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if c := readyOf(t, client, "n1"); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready %v after the runtime was away %v = %s %q, want True", runtimeSyncThreshold-time.Second, runtimeSyncThreshold-time.Second, c.Status, c.Message)
	}
	clock = clock.Add(time.Second)
	if err := r.UpdateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	c := readyOf(t, client, "n1")
	if c.Status != v1.ConditionFalse || c.Message != "container runtime is down: connection refused" {
		t.Fatalf("Ready after %v = %s %q, want False: container runtime is down", runtimeSyncThreshold, c.Status, c.Message)
	}
}

// fakeImages lists a fixed set of images.
type fakeImages []*runtimeapi.Image

func (f fakeImages) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: f}, nil
}

// status.nodeInfo carries the machine's IDs, the runtime's name and
// version ("containerd://1.6.20~ds1", the kubelet's VersionInfo setter);
// status.images the runtime's images largest first, named by digests then
// tags, at most 5 names and 50 images (the kubelet's Images setter).
func TestNodeInfoAndImages(t *testing.T) {
	var imgs fakeImages
	for i := range 60 {
		imgs = append(imgs, &runtimeapi.Image{Id: fmt.Sprintf("sha256:%02d", i), Size: uint64(1000 + i),
			RepoTags: []string{fmt.Sprintf("example.com/img%d:v1", i)}, RepoDigests: []string{fmt.Sprintf("example.com/img%d@sha256:%02d", i, i)}})
	}
	imgs[0].RepoTags = []string{"a:1", "a:2", "a:3", "a:4", "a:5"}
	imgs[0].Size = 1 << 30 // the largest
	client := fake.NewClientset()
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: report, Runtime: &fakeRuntime{podCIDRs: []string{"10.244.0.0/24"}}, Images: imgs,
		SystemInfo: v1.NodeSystemInfo{MachineID: "m-1", BootID: "b-1", KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)"}})
	if err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info := n.Status.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://1.6.20" || info.MachineID != "m-1" || info.BootID != "b-1" ||
		info.KernelVersion != "6.1.0" || info.OSImage != "Debian GNU/Linux 12 (bookworm)" || info.OperatingSystem != "linux" {
		t.Errorf("nodeInfo %+v", info)
	}
	got := n.Status.Images
	if len(got) != 50 {
		t.Fatalf("%d images, want 50", len(got))
	}
	if want := []string{"example.com/img0@sha256:00", "a:1", "a:2", "a:3", "a:4"}; !slices.Equal(got[0].Names, want) || got[0].SizeBytes != 1<<30 {
		t.Errorf("first image %+v, want the largest named %v", got[0], want)
	}
	if got[1].Names[1] != "example.com/img59:v1" || got[49].Names[1] != "example.com/img11:v1" {
		t.Errorf("images not largest first: second %v, last %v", got[1].Names, got[49].Names)
	}
}

// The periodic status sync patches the Node only when its status changed
// (heartbeats aside) or the report interval passed, as the kubelet's
// tryUpdateNodeStatus; the Lease is the heartbeat in between.
func TestStatusPatchedOnlyOnChangeOrReportInterval(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	clock := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	pressure := v1.ConditionFalse
	var mu sync.Mutex
	rep := func(context.Context) (NodeReport, error) {
		mu.Lock()
		defer mu.Unlock()
		return NodeReport{Conditions: []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: pressure}}}, nil
	}
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: rep, Now: func() time.Time { return clock }})
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	patches := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	sync := func(after time.Duration) {
		t.Helper()
		clock = clock.Add(after)
		if err := r.syncStatus(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	// The first sync after a start reports (the kubelet's
	// lastStatusReportTime is zero then).
	sync(10 * time.Second)
	base := patches()
	sync(10 * time.Second)
	sync(10 * time.Second)
	if got := patches() - base; got != 0 {
		t.Fatalf("%d status patches with nothing changed, want none", got)
	}
	mu.Lock()
	pressure = v1.ConditionTrue
	mu.Unlock()
	sync(10 * time.Second)
	if got := patches() - base; got != 1 {
		t.Fatalf("%d status patches after MemoryPressure turned True, want 1", got)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := findNodeCondition(n, v1.NodeMemoryPressure); c == nil || c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(clock) {
		t.Errorf("MemoryPressure %+v, want True since %v", c, clock)
	}
	// Unchanged again: nothing until the report interval (5 min, spread by
	// up to half of it either way) has passed.
	sync(10 * time.Second)
	if got := patches() - base; got != 1 {
		t.Fatalf("%d status patches, want still 1", got)
	}
	sync(8 * time.Minute)
	if got := patches() - base; got != 2 {
		t.Fatalf("%d status patches 8 min later, want the periodic report (2)", got)
	}
}

// A pod with a RestartAllContainers rule needs a Node declaring
// RestartAllContainersOnContainerExits for a v1.36 kube-scheduler
// (NodeDeclaredFeatures) to place it; the registered Node declares it, and
// nothing sync does not implement, judged by the scheduler's own framework.
func TestRegisteredNodeDeclaresRestartAllContainers(t *testing.T) {
	client := fake.NewClientset()
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: report})
	if err := r.Register(t.Context()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ExtendWebSocketsToKubelet", "RestartAllContainersOnContainerExits"}; !slices.Equal(n.Status.DeclaredFeatures, want) {
		t.Errorf("declaredFeatures = %v, want %v", n.Status.DeclaredFeatures, want)
	}
	never := v1.ContainerRestartPolicyNever
	for _, tc := range []struct {
		desc  string
		spec  v1.PodSpec
		match bool
	}{
		{desc: "RestartAllContainers rule", match: true, spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", RestartPolicy: &never,
			RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}},
		{desc: "user namespace with host network (not implemented)", match: false, spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}},
			HostNetwork: true, HostUsers: ptr(false)}},
		{desc: "plain pod", match: true, spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			reqs, err := ndf.DefaultFramework.InferForPodScheduling(&ndftypes.PodInfo{Spec: &tc.spec}, version.MustParse("1.36.3"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := ndf.DefaultFramework.MatchNode(reqs, n)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsMatch != tc.match {
				t.Errorf("match = %+v, want %t", res, tc.match)
			}
		})
	}
}

func TestParseRuntimeVersion(t *testing.T) {
	for _, tc := range []struct{ desc, raw, want string }{
		{desc: "Debian's containerd 1.6: the packaging suffix dropped", raw: "1.6.20~ds1", want: "1.6.20"},
		{desc: "containerd 2.x release: the v dropped", raw: "v2.4.2", want: "2.4.2"},
		{desc: "semantic with a pre-release kept", raw: "v2.4.0-rc.1", want: "2.4.0-rc.1"},
		{desc: "the fake backend", raw: "0.1.0", want: "0.1.0"},
		{desc: "not a version", raw: "abc", want: "Unknown"},
	} {
		if got := parseRuntimeVersion(tc.raw); got != tc.want {
			t.Errorf("%s: parseRuntimeVersion(%q) = %q, want %q", tc.desc, tc.raw, got, tc.want)
		}
	}
}

// The Node reports the runtime's handlers and whether it honours
// supplementalGroupsPolicy (the kubelet's RuntimeHandlers and NodeFeatures
// setters), with recursive read-only mounts and user namespaces false:
// sync refuses pods needing them whatever the runtime can do.
func TestNodeReportsRuntimeHandlersAndFeatures(t *testing.T) {
	client := fake.NewClientset()
	r := NewNodeRegistrar(client, NodeOptions{Name: "n1", Report: report, Runtime: &fakeRuntime{podCIDRs: []string{"10.0.0.0/24"}}})
	if err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := n.Status.Features; f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy {
		t.Errorf("status.features = %+v, want supplementalGroupsPolicy true", f)
	}
	if len(n.Status.RuntimeHandlers) != 2 || n.Status.RuntimeHandlers[1].Name != "runc" {
		t.Fatalf("status.runtimeHandlers = %+v, want the runtime's two", n.Status.RuntimeHandlers)
	}
	// Recursive read-only mounts as the runtime says; user namespaces
	// false whatever it says (sync refuses hostUsers: false).
	for _, h := range n.Status.RuntimeHandlers {
		wantRRO := h.Name == ""
		if f := h.Features; f == nil || f.RecursiveReadOnlyMounts == nil || *f.RecursiveReadOnlyMounts != wantRRO || f.UserNamespaces == nil || *f.UserNamespaces {
			t.Errorf("handler %q features %+v, want recursiveReadOnlyMounts %t and userNamespaces false", h.Name, f, wantRRO)
		}
	}
}
