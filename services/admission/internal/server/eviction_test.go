package server

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/eviction"
	"github.com/splitlet/splitlet/services/admission/internal/admitter"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

// The real eviction manager, fed scripted memory pressure, wired as Run
// wires it: the admitter's active pods are what it ranks, its conditions
// reject BestEffort pods and show in GetNode, and its eviction reaches a
// WatchEvictions stream.
func TestEvictionManagerWiring(t *testing.T) {
	thresholds, err := eviction.ParseThresholdConfig(eviction.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}})
	if err != nil {
		t.Fatal(err)
	}
	source := &eviction.ScriptedSource{}
	// The hog uses 200Mi without requesting any; the Guaranteed pod stays
	// under its request, so the kubelet's memory ranking picks the hog.
	memory := func(available string) eviction.Observations {
		return eviction.Observations{
			Signals: map[eviction.Signal]eviction.SignalObservation{
				eviction.SignalMemoryAvailable: {
					Available: resource.MustParse(available), Capacity: resource.MustParse("1Gi"), Time: time.Now(),
				},
			},
			Pods: []eviction.PodStats{
				{UID: "uid-guaranteed", Namespace: "default", Name: "guaranteed", MemoryWorkingSetBytes: 50 << 20},
				{UID: "uid-hog", Namespace: "default", Name: "hog", MemoryWorkingSetBytes: 200 << 20},
			},
		}
	}
	source.Set(memory("800Mi"))
	mgr := eviction.NewManager(eviction.Config{Thresholds: thresholds}, source)
	adm, err := admitter.New(admitter.Options{Node: testfixture.Node(), Eviction: mgr})
	if err != nil {
		t.Fatal(err)
	}
	httpClient, url := startServer(t, NewService(Options{Admitter: adm, Evictions: mgr}))
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admit := func(pod *v1.Pod, active ...*v1.Pod) *admissionv1.AdmitResponse {
		t.Helper()
		resp, err := client.Admit(ctx, connect.NewRequest(&admissionv1.AdmitRequest{
			Pod: marshal(t, pod)[0], ActivePods: marshal(t, active...),
		}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg
	}
	guaranteed := testfixture.Pod("guaranteed", "100m", "100Mi")
	hog := testfixture.Pod("hog", "", "")
	if r := admit(hog, guaranteed); !r.Admit {
		t.Fatalf("no pressure yet, hog rejected: %s %s", r.Reason, r.Message)
	}

	stream, err := client.WatchEvictions(ctx, connect.NewRequest(&admissionv1.WatchEvictionsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	// The server subscribes before it sends the headers; once they are here
	// no eviction can be published ahead of the subscription.
	stream.ResponseHeader()

	source.Set(memory("50Mi"))
	// Synchronize by hand rather than through Run's timer; the admitter's
	// ActivePods is the ActivePodsFunc Run passes.
	evicted, err := mgr.Synchronize(ctx, adm.ActivePods)
	if err != nil {
		t.Fatal(err)
	}
	if len(evicted) != 1 || evicted[0].Pod.Name != "hog" {
		t.Fatalf("evicted %v, want the BestEffort hog", evicted)
	}
	if !stream.Receive() {
		t.Fatalf("no eviction on the stream: %v", stream.Err())
	}
	if got := stream.Msg(); got.Pod.GetName() != "hog" || got.Signal != "memory.available" || got.Reason != "Evicted" {
		t.Errorf("streamed eviction %v", got)
	}

	if r := admit(testfixture.Pod("another-besteffort", "", ""), guaranteed); r.Admit || r.Reason != "Evicted" {
		t.Errorf("BestEffort pod under memory pressure: admit %v reason %q, want rejected Evicted", r.Admit, r.Reason)
	}
	if r := admit(testfixture.Pod("burstable", "100m", "50Mi"), guaranteed); !r.Admit {
		t.Errorf("Guaranteed pod under memory pressure rejected: %s %s", r.Reason, r.Message)
	}

	nodeResp, err := client.GetNode(ctx, connect.NewRequest(&admissionv1.GetNodeRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	node := &v1.Node{}
	if err := node.Unmarshal(nodeResp.Msg.Node); err != nil {
		t.Fatal(err)
	}
	var memPressure v1.ConditionStatus
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeMemoryPressure {
			memPressure = c.Status
		}
	}
	if memPressure != v1.ConditionTrue {
		t.Errorf("MemoryPressure = %q in GetNode, want True: %v", memPressure, node.Status.Conditions)
	}
}

// Disk pressure, wired as Run wires it: the manager's reclaim request
// reaches a WatchEvictions stream (with no pod, so an older sync skips it),
// the watcher's ReportReclaim answers it, and the manager, observing the
// node relieved, evicts nobody. A second report of the same id is
// NotFound, and so is a report with no eviction manager at all.
func TestReclaimOverTheWire(t *testing.T) {
	thresholds, err := eviction.ParseThresholdConfig(eviction.ThresholdConfig{Hard: map[string]string{"imagefs.available": "10Gi"}})
	if err != nil {
		t.Fatal(err)
	}
	imagefs := func(available string) eviction.Observations {
		return eviction.Observations{Signals: map[eviction.Signal]eviction.SignalObservation{
			eviction.SignalImageFsAvailable: {Available: resource.MustParse(available), Capacity: resource.MustParse("100Gi")},
		}}
	}
	source := &eviction.ScriptedSource{}
	source.Set(imagefs("5Gi"))
	mgr := eviction.NewManager(eviction.Config{Thresholds: thresholds, NodeReclaimTimeout: time.Minute}, source)
	adm, err := admitter.New(admitter.Options{Node: testfixture.Node(), Eviction: mgr})
	if err != nil {
		t.Fatal(err)
	}
	httpClient, url := startServer(t, NewService(Options{Admitter: adm, Evictions: mgr}))
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := client.WatchEvictions(ctx, connect.NewRequest(&admissionv1.WatchEvictionsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	stream.ResponseHeader()

	web := testfixture.Pod("web", "", "")
	type result struct {
		evicted []eviction.Eviction
		err     error
	}
	done := make(chan result, 1)
	go func() {
		evicted, err := mgr.Synchronize(ctx, func() []*v1.Pod { return []*v1.Pod{web} })
		done <- result{evicted, err}
	}()
	if !stream.Receive() {
		t.Fatalf("no reclaim request on the stream: %v", stream.Err())
	}
	msg := stream.Msg()
	req := msg.GetReclaim()
	if msg.GetPod() != nil || req.GetId() == "" || req.GetSignal() != "imagefs.available" || !req.GetContainers() || !req.GetImages() {
		t.Fatalf("streamed %v, want a reclaim request for imagefs.available, containers and images, without a pod", msg)
	}
	source.Set(imagefs("40Gi"))
	report := &admissionv1.ReportReclaimRequest{Id: req.GetId(), ImageBytesFreed: 35 << 30}
	if _, err := client.ReportReclaim(ctx, connect.NewRequest(report)); err != nil {
		t.Fatalf("ReportReclaim: %v", err)
	}
	if r := <-done; r.err != nil || len(r.evicted) != 0 {
		t.Errorf("Synchronize after a relieving reclaim: evicted %d pods, err %v; want none", len(r.evicted), r.err)
	}
	if _, err := client.ReportReclaim(ctx, connect.NewRequest(report)); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("second ReportReclaim = %v, want NotFound", err)
	}
	if _, err := client.ReportReclaim(ctx, connect.NewRequest(&admissionv1.ReportReclaimRequest{})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("ReportReclaim without an id = %v, want InvalidArgument", err)
	}

	_, url = startServer(t, newTestService(t, nil))
	bare := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
	if _, err := bare.ReportReclaim(ctx, connect.NewRequest(report)); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("ReportReclaim without an eviction manager = %v, want NotFound", err)
	}
}
