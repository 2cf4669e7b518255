package podresources

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// fakePods is a PodsProvider over fixed pods; those in terminated are
// inactive, as the sync loop's pods whose workers finished.
type fakePods struct {
	pods       []*v1.Pod
	terminated map[types.UID]bool
}

var _ PodsProvider = fakePods{}

func (f fakePods) GetActivePods() []*v1.Pod {
	var active []*v1.Pod
	for _, p := range f.pods {
		if !f.terminated[p.UID] {
			active = append(active, p)
		}
	}
	return active
}

func (f fakePods) GetActivePodByName(namespace, name string) (*v1.Pod, bool) {
	for _, p := range f.GetActivePods() {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

func testPod(namespace, name string, spec v1.PodSpec) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)}, Spec: spec}
}

// serve serves New(pods, metrics) on a unix socket under a temporary directory, as
// sync does, and returns a client of the generated API connected to it.
func serve(t *testing.T, pods PodsProvider, metrics *Metrics) podresourcesv1.PodResourcesListerClient {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pod-resources", "kubelet.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewGRPCServer(New(pods, metrics))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.GracefulStop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return podresourcesv1.NewPodResourcesListerClient(conn)
}

func TestPodResources(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	web := testPod("default", "web", v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}, {Name: "logger"}},
	})
	done := testPod("default", "done", v1.PodSpec{Containers: []v1.Container{{Name: "job"}}})
	dns := testPod("kube-system", "dns", v1.PodSpec{Containers: []v1.Container{{Name: "coredns"}}})
	reg := prometheus.NewRegistry()
	client := serve(t, fakePods{pods: []*v1.Pod{done, web, dns}, terminated: map[types.UID]bool{done.UID: true}}, NewMetrics(reg))
	// A sidecar (restartable init container) is listed before the
	// containers; a plain init container is not; no container has
	// devices, CPUs, memory or dynamic resources.
	webResources := &podresourcesv1.PodResources{Name: "web", Namespace: "default", Containers: []*podresourcesv1.ContainerResources{
		{Name: "proxy"}, {Name: "app"}, {Name: "logger"},
	}}
	dnsResources := &podresourcesv1.PodResources{Name: "dns", Namespace: "kube-system", Containers: []*podresourcesv1.ContainerResources{{Name: "coredns"}}}
	ctx := context.Background()

	t.Run("List: the active pods, the terminated one left out", func(t *testing.T) {
		resp, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{webResources, dnsResources}}
		if !proto.Equal(resp, want) {
			t.Errorf("List = %s\nwant %s", prototext.Format(resp), prototext.Format(want))
		}
	})

	for _, tc := range []struct {
		desc, namespace, name string
		want                  *podresourcesv1.PodResources
		wantErr               string
	}{
		{desc: "an active pod", namespace: "default", name: "web", want: webResources},
		{desc: "a pod of another namespace", namespace: "kube-system", name: "dns", want: dnsResources},
		{desc: "a missing pod", namespace: "default", name: "nope", wantErr: "pod nope in namespace default not found"},
		{desc: "a pod in the wrong namespace", namespace: "kube-system", name: "web", wantErr: "pod web in namespace kube-system not found"},
		{desc: "a terminated pod", namespace: "default", name: "done", wantErr: "pod done in namespace default not found"},
	} {
		t.Run("Get: "+tc.desc, func(t *testing.T) {
			resp, err := client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: tc.namespace, PodName: tc.name})
			if tc.wantErr != "" {
				// The kubelet's plain error reaches the client as Unknown.
				if s, _ := status.FromError(err); s.Code() != codes.Unknown || s.Message() != tc.wantErr {
					t.Errorf("Get = %v, %v; want Unknown %q", resp, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(resp.GetPodResources(), tc.want) {
				t.Errorf("Get = %s\nwant %s", prototext.Format(resp), prototext.Format(tc.want))
			}
		})
	}

	t.Run("GetAllocatableResources: nothing to allocate", func(t *testing.T) {
		resp, err := client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(resp, &podresourcesv1.AllocatableResourcesResponse{}) {
			t.Errorf("GetAllocatableResources = %s, want empty", prototext.Format(resp))
		}
	})

	t.Run("the kubelet's counters", func(t *testing.T) {
		want := `
# HELP kubelet_pod_resources_endpoint_errors_get Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_errors_get counter
kubelet_pod_resources_endpoint_errors_get{server_api_version="v1"} 3
# HELP kubelet_pod_resources_endpoint_requests_get Number of requests to the PodResource Get endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_get counter
kubelet_pod_resources_endpoint_requests_get{server_api_version="v1"} 5
# HELP kubelet_pod_resources_endpoint_requests_get_allocatable Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_get_allocatable counter
kubelet_pod_resources_endpoint_requests_get_allocatable{server_api_version="v1"} 1
# HELP kubelet_pod_resources_endpoint_requests_list Number of requests to the PodResource List endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_list counter
kubelet_pod_resources_endpoint_requests_list{server_api_version="v1"} 1
# HELP kubelet_pod_resources_endpoint_requests_total Cumulative number of requests to the PodResource endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_total counter
kubelet_pod_resources_endpoint_requests_total{server_api_version="v1"} 7
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	})
}

// denyAfter allows n calls, then none.
type denyAfter struct{ n int }

func (d *denyAfter) Allow() bool {
	d.n--
	return d.n >= 0
}

// TestRateLimit: a call over the limit is refused with the kubelet's
// ResourceExhausted before it reaches the server.
func TestRateLimit(t *testing.T) {
	intercept := limitUnary(&denyAfter{n: 1})
	reached := 0
	handler := func(context.Context, any) (any, error) {
		reached++
		return &podresourcesv1.ListPodResourcesResponse{}, nil
	}
	if _, err := intercept(context.Background(), nil, &grpc.UnaryServerInfo{}, handler); err != nil {
		t.Fatalf("first call: %v", err)
	}
	_, err := intercept(context.Background(), nil, &grpc.UnaryServerInfo{}, handler)
	if s, _ := status.FromError(err); s.Code() != codes.ResourceExhausted || s.Message() != "rejected by rate limit" {
		t.Errorf("second call: %v, want ResourceExhausted \"rejected by rate limit\"", err)
	}
	if reached != 1 {
		t.Errorf("the server was reached %d times, want 1", reached)
	}
	// The kubelet's bucket: DefaultBurstTokens calls at once, no more.
	l := newLimiter()
	for i := range DefaultBurstTokens {
		if !l.Allow() {
			t.Fatalf("call %d of the burst refused", i+1)
		}
	}
	if l.Limit() != DefaultQPS || l.Burst() != DefaultBurstTokens {
		t.Errorf("limiter %v/s burst %d, want %d/s burst %d", l.Limit(), l.Burst(), DefaultQPS, DefaultBurstTokens)
	}
}

// TestListenRefusesALiveSocket: a socket another server still answers on
// (a kubelet's) is not taken over.
func TestListenRefusesALiveSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet.sock")
	other, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ln, err := Listen(path); err == nil {
		ln.Close()
		t.Fatal("Listen took over a socket another process serves")
	}
}
