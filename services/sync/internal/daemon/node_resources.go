package daemon

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/apiserver"
)

// nodeReport reports the registered Node's capacity, allocatable and
// pressure conditions: admission's view (GetNode: it knows reservations,
// eviction thresholds and pressure) when an admission endpoint is set, else
// the machine's CPUs, memory and the kubelet's default 110 pods.
func nodeReport(admissionEndpoint string) apiserver.ReportFunc {
	if admissionEndpoint == "" {
		return machineReport
	}
	base := admissionEndpoint
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	svc := admissionv1connect.NewAdmissionServiceClient(&http.Client{Transport: &http.Transport{Protocols: &p}}, base, connect.WithGRPC())
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
