package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

// BenchmarkAdmit110 measures one Admit over gRPC (h2c, loopback) against 110
// active pods, the kubelet's default pod limit: decoding, the built-in chain
// and encoding, without plugins, wired as Run wires it (newAdmission, with
// its cache of decoded pods). It reports p50 and p99 per call and the CPU
// time of this process (client and server) per call.
func BenchmarkAdmit110(b *testing.B) {
	node := testfixture.Node()
	node.Status.Allocatable[v1.ResourcePods] = resource.MustParse("200")
	node.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("64")
	node.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("256Gi")
	a, err := newAdmission(context.Background(), node, nil, nil, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	httpClient, url := startServer(b, a.svc)
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())

	var active [][]byte
	for i := range 110 {
		p, err := testfixture.Pod(fmt.Sprintf("p%d", i), "100m", "128Mi").Marshal()
		if err != nil {
			b.Fatal(err)
		}
		active = append(active, p)
	}
	pod, err := testfixture.Pod("new", "100m", "128Mi").Marshal()
	if err != nil {
		b.Fatal(err)
	}
	req := &admissionv1.AdmitRequest{Pod: pod, ActivePods: active}
	ctx := context.Background()

	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		start := time.Now()
		resp, err := client.Admit(ctx, connect.NewRequest(req))
		durations = append(durations, time.Since(start))
		if err != nil || !resp.Msg.Admit {
			b.Fatalf("Admit: %v %v", resp, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(len(durations)), "cpu-µs/op")
	slices.Sort(durations)
	q := func(f float64) float64 { return float64(durations[int(f*float64(len(durations)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}
