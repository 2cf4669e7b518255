package daemon

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/internal/apiauth"
	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/apiserver"
)

// admissionConn is how sync reaches splitlet-admission: an HTTP client
// carrying its credential, and the base URL of its AdmissionService.
type admissionConn struct {
	client *http.Client
	base   string
}

// dialAdmission is the connection of d, or nil without an endpoint. It
// speaks gRPC: HTTP/2, without TLS by prior knowledge.
func dialAdmission(d apiauth.Dial) (*admissionConn, error) {
	if d.Endpoint == "" {
		return nil, nil
	}
	// HTTP/1.1 in cleartext and the Connect protocol: see admission.New.
	hc, base, err := d.Client(false)
	if err != nil {
		return nil, fmt.Errorf("--admission-endpoint: %w", err)
	}
	return &admissionConn{client: hc, base: base}, nil
}

// nodeReport reports the registered Node's capacity, allocatable and
// pressure conditions: admission's view (GetNode: it knows reservations,
// eviction thresholds and pressure) when an admission endpoint is set, else
// the machine's CPUs, memory and the kubelet's default 110 pods.
func nodeReport(adm *admissionConn) apiserver.ReportFunc {
	if adm == nil {
		return machineReport
	}
	svc := admissionv1connect.NewAdmissionServiceClient(adm.client, adm.base)
	return func(ctx context.Context) (apiserver.NodeReport, error) {
		resp, err := svc.GetNode(ctx, connect.NewRequest(&admissionv1.GetNodeRequest{}))
		if err != nil {
			return apiserver.NodeReport{}, fmt.Errorf("admission GetNode: %w", err)
		}
		var node v1.Node
		if err := node.Unmarshal(resp.Msg.GetNode()); err != nil {
			return apiserver.NodeReport{}, fmt.Errorf("admission GetNode: decode node: %w", err)
		}
		return apiserver.NodeReport{
			Capacity:    node.Status.Capacity,
			Allocatable: node.Status.Allocatable,
			Conditions:  node.Status.Conditions,
		}, nil
	}
}

func machineReport(context.Context) (apiserver.NodeReport, error) {
	c := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(machineMemory(), resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	return apiserver.NodeReport{Capacity: c, Allocatable: c.DeepCopy()}, nil
}

// allocatableTTL is how long nodeAllocatable keeps an answer: downward API
// volumes ask on every pod sync.
const allocatableTTL = 10 * time.Second

// nodeAllocatable returns the node's allocatable resources as report
// gives them (admission's, or the machine's), kept for ttl; when
// report fails the last answer stands, and the machine's before the first.
// The downward API's default limits read it (the kubelet's
// defaultPodLimitsForDownwardAPI reads its node's allocatable).
func nodeAllocatable(report apiserver.ReportFunc, ttl time.Duration) func() v1.ResourceList {
	var (
		mu   sync.Mutex
		at   time.Time
		last v1.ResourceList
	)
	return func() v1.ResourceList {
		mu.Lock()
		defer mu.Unlock()
		if last != nil && time.Since(at) < ttl {
			return last
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := report(ctx)
		switch {
		case err == nil && r.Allocatable != nil:
			last, at = r.Allocatable, time.Now()
		case last == nil:
			m, _ := machineReport(ctx)
			last, at = m.Allocatable, time.Now()
		}
		return last
	}
}
