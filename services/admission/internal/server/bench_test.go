package server

import (
	"context"
	"crypto/sha256"
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

// BenchmarkAdmit110 measures one Admit, called as sync calls it (Connect
// over HTTP/1.1, loopback; syncClient), against 110
// active pods, the kubelet's default pod limit: decoding, the built-in chain
// and encoding, without plugins, wired as Run wires it (newAdmission, with
// its cache of decoded pods). It reports p50 and p99 per call and CPU time
// per call (benchMeter; -pin runs the service apart, on a CPU of its own).
func BenchmarkAdmit110(b *testing.B) {
	target := startBenchTarget(b, "")
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

	m := target.meter(b)
	for b.Loop() {
		start := time.Now()
		resp, err := target.client.Admit(ctx, connect.NewRequest(req))
		m.observe(time.Since(start))
		if err != nil || !resp.Msg.Admit {
			b.Fatalf("Admit: %v %v", resp, err)
		}
	}
	m.report(b)
}

// benchMeter collects an Admit benchmark's latencies and CPU time. Run in
// one process, CPU time is this process's: client, service and the host's
// side of the plugin hop (cpu-µs/op). With -pin it is split by process:
// client-, service- and plugin-cpu-µs/op, and their sum total-cpu-µs/op;
// and the service's heap bytes, GC cycles and syscalls are reported too.
type benchMeter struct {
	target  *benchTarget
	lat     []time.Duration
	self    time.Duration
	service serviceUsage
}

func (t *benchTarget) meter(b *testing.B) *benchMeter {
	m := &benchMeter{target: t, lat: make([]time.Duration, 0, b.N)}
	b.ReportAllocs()
	if t.usage != nil {
		m.service = t.usage()
	}
	m.self = processCPU()
	return m
}

func (m *benchMeter) observe(d time.Duration) { m.lat = append(m.lat, d) }

func (m *benchMeter) calls() int { return len(m.lat) }

func (m *benchMeter) report(b *testing.B) {
	b.StopTimer()
	n := float64(len(m.lat))
	perCall := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
	self := processCPU() - m.self
	if m.target.usage == nil {
		b.ReportMetric(perCall(self), "cpu-µs/op")
	} else {
		u := m.target.usage().sub(m.service)
		b.ReportMetric(perCall(self), "client-cpu-µs/op")
		b.ReportMetric(perCall(u.service.cpu), "service-cpu-µs/op")
		b.ReportMetric(perCall(u.plugins.cpu), "plugin-cpu-µs/op")
		b.ReportMetric(perCall(self+u.service.cpu+u.plugins.cpu), "total-cpu-µs/op")
		// Deterministic beside the CPU times, which this VM's speed
		// moves: what each call makes the service allocate and how often
		// that runs its GC (a call caught by a GC cycle on the service's
		// one CPU waits out the mark phase), and its syscalls.
		b.ReportMetric(float64(u.service.syscalls)/n, "service-rw-syscalls/op")
		b.ReportMetric(float64(u.plugins.syscalls)/n, "plugin-rw-syscalls/op")
		b.ReportMetric(float64(u.heapAlloc)/n, "service-B/op")
		b.ReportMetric(float64(u.gcCycles)*1000/n, "service-gcs/1000op")
	}
	slices.Sort(m.lat)
	q := func(f float64) float64 { return float64(m.lat[int(f*float64(len(m.lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// benchActive is the active set of BenchmarkAdmit1000: n typical pods,
// encoded, with the references a client keeping copies sends.
func benchActive(b *testing.B, n int) ([][]byte, []*admissionv1.ActivePod) {
	b.Helper()
	var raws [][]byte
	var refs []*admissionv1.ActivePod
	for i := range n {
		raw, err := testfixture.TypicalPod(fmt.Sprintf("active-%d", i)).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		d := sha256.Sum256(raw)
		raws = append(raws, raw)
		refs = append(refs, &admissionv1.ActivePod{Uid: fmt.Sprintf("uid-web-active-%d", i), Digest: d[:]})
	}
	return raws, refs
}

// BenchmarkAdmit1000 measures the cost per admitted pod beside 1000 active
// pods (a burst's end state), called as sync calls it on loopback, client and server in
// this process, without plugins, wired as Run wires it:
//
//   - sequential-full: one Admit per pod with every active pod encoded and
//     sent in full, as sync did before active pods went by reference (the
//     client encodes them all again for every call);
//   - sequential-refs: one Admit per pod, active pods by reference;
//   - batch32-refs: AdmitPods with 32 new pods per call, active pods by
//     reference.
//
// Every new pod is a fresh typical pod (built and encoded in the loop in
// all three), so the server decodes each once. ns/op and cpu-µs/op are
// per pod; p50/p99 are per call.
func BenchmarkAdmit1000(b *testing.B) {
	const nActive, batch = 1000, 32
	node := testfixture.Node()
	node.Status.Allocatable[v1.ResourcePods] = resource.MustParse("5000")
	node.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("1000")
	node.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("4Ti")
	activeRaw, activeRefs := benchActive(b, nActive)
	activePods := make([]*v1.Pod, nActive)
	for i := range activePods {
		activePods[i] = testfixture.TypicalPod(fmt.Sprintf("active-%d", i))
	}
	ctx := context.Background()

	setup := func(b *testing.B) admissionv1connect.AdmissionServiceClient {
		a, err := newAdmission(ctx, node, nil, nil, Options{Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		_, url := startServer(b, a.svc)
		client := syncClient(b, url)
		// The server is sent every active pod in full once, as a
		// client's first call does.
		full := make([]*admissionv1.ActivePod, nActive)
		for i, r := range activeRefs {
			full[i] = &admissionv1.ActivePod{Uid: r.Uid, Digest: r.Digest, Pod: activeRaw[i]}
		}
		if _, err := client.Admit(ctx, connect.NewRequest(&admissionv1.AdmitRequest{Pod: newPodBytes(b, -1), Active: full})); err != nil {
			b.Fatal(err)
		}
		return client
	}

	b.Run("sequential-full", func(b *testing.B) {
		client := setup(b)
		var durations []time.Duration
		b.ReportAllocs()
		cpu := processCPU()
		i := 0
		for b.Loop() {
			start := time.Now()
			// The old client: every active pod encoded for every call.
			req := &admissionv1.AdmitRequest{Pod: newPodBytes(b, i), ActivePods: make([][]byte, 0, nActive)}
			for _, p := range activePods {
				raw, err := p.Marshal()
				if err != nil {
					b.Fatal(err)
				}
				req.ActivePods = append(req.ActivePods, raw)
			}
			resp, err := client.Admit(ctx, connect.NewRequest(req))
			durations = append(durations, time.Since(start))
			if err != nil || !resp.Msg.Admit {
				b.Fatalf("Admit: %v %v", resp, err)
			}
			i++
		}
		reportPerPod(b, cpu, i, durations)
	})

	b.Run("sequential-refs", func(b *testing.B) {
		client := setup(b)
		var durations []time.Duration
		b.ReportAllocs()
		cpu := processCPU()
		i := 0
		for b.Loop() {
			start := time.Now()
			resp, err := client.Admit(ctx, connect.NewRequest(&admissionv1.AdmitRequest{Pod: newPodBytes(b, i), Active: activeRefs}))
			durations = append(durations, time.Since(start))
			if err != nil || !resp.Msg.Admit {
				b.Fatalf("Admit: %v %v", resp, err)
			}
			i++
		}
		reportPerPod(b, cpu, i, durations)
	})

	b.Run(fmt.Sprintf("batch%d-refs", batch), func(b *testing.B) {
		client := setup(b)
		var durations []time.Duration
		b.ReportAllocs()
		cpu := processCPU()
		pods := 0
		// b.N counts pods; each call admits up to batch of them.
		for pods < b.N {
			n := min(batch, b.N-pods)
			req := &admissionv1.AdmitPodsRequest{Pods: make([][]byte, 0, n), Active: activeRefs}
			start := time.Now()
			for j := range n {
				req.Pods = append(req.Pods, newPodBytes(b, pods+j))
			}
			resp, err := client.AdmitPods(ctx, connect.NewRequest(req))
			durations = append(durations, time.Since(start))
			if err != nil || len(resp.Msg.Results) != n || !resp.Msg.Results[n-1].Admit {
				b.Fatalf("AdmitPods: %v %v", resp, err)
			}
			pods += n
		}
		b.StopTimer()
		reportPerPod(b, cpu, pods, durations)
	})
}

// newPodBytes builds and encodes the i-th new pod of a benchmark.
func newPodBytes(b *testing.B, i int) []byte {
	raw, err := testfixture.TypicalPod(fmt.Sprintf("new-%d", i)).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkAdmitBurst measures the cost per admitted pod of a burst on a
// node of 100, 1000 and 5000 active pods, the set growing by each call's
// 32 pods as sync's does: the pods a call admitted are active in the next.
// Client and server in this process, without plugins, as
// BenchmarkAdmit1000:
//
//   - refs: the whole set by reference with its digest each call, as sync
//     sent it before it sent changes (O(active pods) per call);
//   - change: the set as the change to the last one (ActiveSetChange: the
//     last call's pods added at the end), O(pods added) per call on the
//     wire; the server still walks the set to apply it.
//
// ns/op and cpu-µs/op are per pod; p50/p99 are per call. A flat cost
// per pod is the same figure at every size.
func BenchmarkAdmitBurst(b *testing.B) {
	const batch = 32
	node := testfixture.Node()
	node.Status.Allocatable[v1.ResourcePods] = resource.MustParse("100000")
	node.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("100000")
	node.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("400Ti")
	ctx := context.Background()

	for _, tc := range []struct {
		nActive  int
		asChange bool
	}{{100, false}, {100, true}, {1000, false}, {1000, true}, {5000, false}, {5000, true}} {
		name := fmt.Sprintf("active=%d/refs", tc.nActive)
		if tc.asChange {
			name = fmt.Sprintf("active=%d/change", tc.nActive)
		}
		nActive, asChange := tc.nActive, tc.asChange
		b.Run(name, func(b *testing.B) {
			activeRaw, activeRefs := benchActive(b, nActive)
			a, err := newAdmission(ctx, node, nil, nil, Options{Logger: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			_, url := startServer(b, a.svc)
			client := syncClient(b, url)
			// The first call sends the set in full, as sync's first does.
			set := make([]*admissionv1.ActivePod, nActive)
			digests := sha256.New()
			for i, r := range activeRefs {
				set[i] = &admissionv1.ActivePod{Uid: r.Uid, Digest: r.Digest, Pod: activeRaw[i]}
				digests.Write(r.Digest)
			}
			digest := digests.Sum(nil)
			resp, err := client.AdmitPods(ctx, connect.NewRequest(&admissionv1.AdmitPodsRequest{Pods: [][]byte{newPodBytes(b, -1)}, Active: set, ActiveSet: digest}))
			if err != nil || !resp.Msg.ActiveSetHeld {
				b.Fatalf("first AdmitPods: %v %v", resp, err)
			}
			set = activeRefs
			var last []*admissionv1.ActivePod
			var durations []time.Duration
			b.ReportAllocs()
			cpu := processCPU()
			pods := 0
			for pods < b.N {
				n := min(batch, b.N-pods)
				req := &admissionv1.AdmitPodsRequest{Pods: make([][]byte, 0, n)}
				start := time.Now()
				// The last call's pods join the set, at its end.
				base := digest
				set = append(set, last...)
				for _, r := range last {
					digests.Write(r.Digest)
				}
				digest = digests.Sum(nil)
				if asChange {
					change := &admissionv1.ActiveSetChange{Base: base, Added: last}
					for j := range last {
						change.AddedAt = append(change.AddedAt, uint32(len(set)-len(last)+j))
					}
					req.ActiveChange, req.ActiveSet = change, digest
				} else {
					req.Active, req.ActiveSet = set, digest
				}
				last = nil
				for j := range n {
					raw := newPodBytes(b, pods+j)
					d := sha256.Sum256(raw)
					req.Pods = append(req.Pods, raw)
					last = append(last, &admissionv1.ActivePod{Uid: fmt.Sprintf("uid-web-new-%d", pods+j), Digest: d[:]})
				}
				resp, err := client.AdmitPods(ctx, connect.NewRequest(req))
				durations = append(durations, time.Since(start))
				if err != nil || len(resp.Msg.Results) != n || !resp.Msg.Results[n-1].Admit || !resp.Msg.ActiveSetHeld {
					b.Fatalf("AdmitPods: %v %v", resp, err)
				}
				pods += n
			}
			b.StopTimer()
			reportPerPod(b, cpu, pods, durations)
		})
	}
}

// reportPerPod reports the process's CPU since cpu per pod admitted, and
// the p50 and p99 of the calls' durations.
func reportPerPod(b *testing.B, cpu time.Duration, pods int, durations []time.Duration) {
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(pods), "cpu-µs/op")
	slices.Sort(durations)
	q := func(f float64) float64 { return float64(durations[int(f*float64(len(durations)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs/call")
	b.ReportMetric(q(0.99), "p99-µs/call")
}
