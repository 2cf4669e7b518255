package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/eviction"
	"github.com/splitlet/splitlet/services/admission/internal/admitter"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
	"github.com/splitlet/splitlet/services/admission/preemption"
)

// protocols are the client protocols every RPC test runs over: Connect (the
// default), gRPC and gRPC-Web, all against the one handler.
var protocols = []struct {
	name string
	opts []connect.ClientOption
}{
	{name: "connect"},
	{name: "grpc", opts: []connect.ClientOption{connect.WithGRPC()}},
	{name: "grpcweb", opts: []connect.ClientOption{connect.WithGRPCWeb()}},
}

// fakeEvictions is a hand-written EvictionSource fed by the test.
type fakeEvictions struct {
	subscribed chan chan eviction.Eviction
}

var _ EvictionSource = (*fakeEvictions)(nil)

func (f *fakeEvictions) Subscribe(ctx context.Context) <-chan eviction.Eviction {
	ch := make(chan eviction.Eviction, 1)
	f.subscribed <- ch
	return ch
}

// SubscribeReclaims returns a channel that never sends: these tests ask
// for no reclaim.
func (f *fakeEvictions) SubscribeReclaims(context.Context) <-chan eviction.ReclaimRequest {
	return nil
}

func (f *fakeEvictions) ReportReclaim(_ context.Context, id string, _ eviction.ReclaimReport) error {
	return fmt.Errorf("reclaim %q: %w", id, errdefs.ErrNotFound)
}

// startServer serves svc over h2c on a loopback httptest server and returns
// an HTTP client that speaks HTTP/2 without TLS, as gRPC needs.
func startServer(t testing.TB, svc *Service) (*http.Client, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(svc.Handler())
	ts.Config = newHTTPServer(svc.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	t.Cleanup(client.CloseIdleConnections)
	return client, ts.URL
}

func newTestService(t *testing.T, ev EvictionSource) *Service {
	t.Helper()
	a, err := admitter.New(admitter.Options{Node: testfixture.Node()})
	if err != nil {
		t.Fatal(err)
	}
	return NewService(Options{Admitter: a, Evictions: ev})
}

func marshal(t *testing.T, pods ...*v1.Pod) [][]byte {
	t.Helper()
	var out [][]byte
	for _, p := range pods {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestAdmit(t *testing.T) {
	tp := testfixture.Pod
	tests := []admitCase{
		{
			desc: "admitted",
			req: func(t *testing.T) *admissionv1.AdmitRequest {
				return &admissionv1.AdmitRequest{Pod: marshal(t, tp("web", "1", "256Mi"))[0], ActivePods: marshal(t, tp("db", "500m", "256Mi"))}
			},
			wantAdmit: true,
		},
		{
			desc: "more memory than allocatable",
			req: func(t *testing.T) *admissionv1.AdmitRequest {
				return &admissionv1.AdmitRequest{Pod: marshal(t, tp("big", "100m", "4Gi"))[0]}
			},
			wantReason: "OutOfmemory",
		},
		{
			desc: "node selector mismatch",
			req: func(t *testing.T) *admissionv1.AdmitRequest {
				pod := testfixture.WithNodeSelector(tp("web", "", ""), map[string]string{"zone": "elsewhere"})
				return &admissionv1.AdmitRequest{Pod: marshal(t, pod)[0]}
			},
			wantReason: "NodeAffinity",
		},
		{
			desc: "critical pod on a full node preempts the BestEffort pod",
			req: func(t *testing.T) *admissionv1.AdmitRequest {
				return &admissionv1.AdmitRequest{
					Pod:        marshal(t, testfixture.Critical(tp("dns", "", "")))[0],
					ActivePods: marshal(t, testfixture.FullOfPods()...),
				}
			},
			wantReason: lifecycle.OutOfPods, wantVictims: []string{"default/besteffort/uid-besteffort"},
		},
		{
			desc: "undecodable pod",
			req: func(*testing.T) *admissionv1.AdmitRequest {
				return &admissionv1.AdmitRequest{Pod: []byte("\xff\xffnot a pod")}
			},
			wantCode: connect.CodeInvalidArgument, wantErrText: "pod: not a core/v1 Pod",
		},
		{
			desc:     "missing pod",
			req:      func(*testing.T) *admissionv1.AdmitRequest { return &admissionv1.AdmitRequest{} },
			wantCode: connect.CodeInvalidArgument, wantErrText: "pod: empty",
		},
		{
			desc: "undecodable active pod is named by index",
			req: func(t *testing.T) *admissionv1.AdmitRequest {
				good := marshal(t, tp("a", "", ""), tp("web", "", ""))
				return &admissionv1.AdmitRequest{Pod: good[1], ActivePods: [][]byte{good[0], []byte("\x0a\xff")}}
			},
			wantCode: connect.CodeInvalidArgument, wantErrText: "active_pods[1]",
		},
	}
	// "cached" is the service as Run wires it, with one cache of decoded
	// pods shared by every case (and, the second time round, hits for
	// every pod): the decisions must be the same as without.
	wirings := []struct {
		name   string
		rounds int
		svc    func(t *testing.T) *Service
	}{
		{name: "plain", rounds: 1, svc: func(t *testing.T) *Service { return newTestService(t, nil) }},
		{name: "cached", rounds: 2, svc: func(t *testing.T) *Service {
			a, err := newAdmission(context.Background(), testfixture.Node(), nil, nil, Options{Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			return a.svc
		}},
	}
	for _, wiring := range wirings {
		for _, proto := range protocols {
			t.Run(wiring.name+"/"+proto.name, func(t *testing.T) {
				httpClient, url := startServer(t, wiring.svc(t))
				client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, proto.opts...)
				for round := range wiring.rounds {
					for _, tc := range tests {
						t.Run(fmt.Sprintf("%s/round%d", tc.desc, round+1), func(t *testing.T) {
							checkAdmit(t, client, tc)
						})
					}
				}
			})
		}
	}
}

type admitCase struct {
	desc string
	// req builds the request; raw bytes let a case send garbage.
	req         func(t *testing.T) *admissionv1.AdmitRequest
	wantCode    connect.Code // 0: success
	wantErrText string
	wantAdmit   bool
	wantReason  string
	wantVictims []string
}

func checkAdmit(t *testing.T, client admissionv1connect.AdmissionServiceClient, tc admitCase) {
	t.Helper()
	resp, err := client.Admit(context.Background(), connect.NewRequest(tc.req(t)))
	if tc.wantCode != 0 {
		if connect.CodeOf(err) != tc.wantCode {
			t.Fatalf("error %v (code %v), want code %v", err, connect.CodeOf(err), tc.wantCode)
		}
		if !strings.Contains(err.Error(), tc.wantErrText) {
			t.Errorf("error %q does not name %q", err, tc.wantErrText)
		}
		return
	}
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	got := resp.Msg
	if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason {
		t.Fatalf("admit %v reason %q (%s), want %v %q", got.Admit, got.Reason, got.Message, tc.wantAdmit, tc.wantReason)
	}
	if !got.Admit && got.Message == "" {
		t.Error("rejection without a message")
	}
	var victims []string
	for _, v := range got.Victims {
		victims = append(victims, v.Namespace+"/"+v.Name+"/"+v.Uid)
	}
	if !slices.Equal(victims, tc.wantVictims) {
		t.Errorf("victims %v, want %v", victims, tc.wantVictims)
	}
	if len(tc.wantVictims) > 0 &&
		(got.VictimReason != preemption.VictimReason || got.VictimMessage != preemption.VictimMessage) {
		t.Errorf("victim reason %q message %q, want %q %q",
			got.VictimReason, got.VictimMessage, preemption.VictimReason, preemption.VictimMessage)
	}
	if len(tc.wantVictims) == 0 && (got.VictimReason != "" || got.VictimMessage != "") {
		t.Errorf("victim reason/message set without victims: %q %q", got.VictimReason, got.VictimMessage)
	}
}

func TestGetNode(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			httpClient, url := startServer(t, newTestService(t, nil))
			client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, proto.opts...)
			resp, err := client.GetNode(context.Background(), connect.NewRequest(&admissionv1.GetNodeRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			node := &v1.Node{}
			if err := node.Unmarshal(resp.Msg.Node); err != nil {
				t.Fatalf("node bytes do not decode: %v", err)
			}
			if node.Name != testfixture.NodeName || node.Labels["zone"] != "a" {
				t.Errorf("node %q labels %v, want the fixture node", node.Name, node.Labels)
			}
			mem := node.Status.Allocatable[v1.ResourceMemory]
			if mem.String() != "1Gi" {
				t.Errorf("allocatable memory %s, want 1Gi", mem.String())
			}
			var conds []string
			for _, c := range node.Status.Conditions {
				conds = append(conds, string(c.Type)+"="+string(c.Status))
			}
			want := []string{"MemoryPressure=False", "DiskPressure=False", "PIDPressure=False"}
			if !slices.Equal(conds, want) {
				t.Errorf("conditions %v, want %v", conds, want)
			}
		})
	}
}

func TestWatchEvictions(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			src := &fakeEvictions{subscribed: make(chan chan eviction.Eviction, 1)}
			svc := newTestService(t, src)
			httpClient, url := startServer(t, svc)
			client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, proto.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stream, err := client.WatchEvictions(ctx, connect.NewRequest(&admissionv1.WatchEvictionsRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()

			var sub chan eviction.Eviction
			select {
			case sub = <-src.subscribed:
			case <-ctx.Done():
				t.Fatal("the stream never subscribed to the eviction source")
			}
			sub <- eviction.Eviction{
				Pod:                 testfixture.Pod("hog", "", ""),
				Reason:              "Evicted",
				Message:             "The node was low on resource: memory. ",
				Signal:              eviction.SignalMemoryAvailable,
				GracePeriodOverride: 1,
			}
			if !stream.Receive() {
				t.Fatalf("no eviction received: %v", stream.Err())
			}
			got := stream.Msg()
			if got.Pod.GetName() != "hog" || got.Pod.GetNamespace() != "default" || got.Pod.GetUid() != "uid-hog" {
				t.Errorf("pod %v, want default/hog uid-hog", got.Pod)
			}
			if got.Reason != "Evicted" || got.Signal != "memory.available" || !strings.Contains(got.Message, "low on resource") {
				t.Errorf("eviction %+v", got)
			}
			if got.GracePeriodSeconds == nil || *got.GracePeriodSeconds != 1 {
				t.Errorf("grace period %v, want 1", got.GracePeriodSeconds)
			}

			// Draining (SIGTERM) ends the stream with Unavailable so the
			// watcher reconnects elsewhere.
			svc.Drain()
			if stream.Receive() {
				t.Fatalf("unexpected message after drain: %v", stream.Msg())
			}
			if connect.CodeOf(stream.Err()) != connect.CodeUnavailable {
				t.Errorf("stream ended with %v, want Unavailable", stream.Err())
			}
		})
	}
}

// Without an eviction manager the stream stays open and silent until the
// service drains.
func TestWatchEvictionsWithoutManager(t *testing.T) {
	svc := newTestService(t, nil)
	httpClient, url := startServer(t, svc)
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := client.WatchEvictions(ctx, connect.NewRequest(&admissionv1.WatchEvictionsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	received := make(chan bool, 1)
	go func() { received <- stream.Receive() }()
	select {
	case got := <-received:
		t.Fatalf("stream ended or sent before drain: Receive=%v err=%v", got, stream.Err())
	case <-time.After(200 * time.Millisecond):
	}
	svc.Drain()
	select {
	case got := <-received:
		if got {
			t.Fatalf("message after drain: %v", stream.Msg())
		}
	case <-ctx.Done():
		t.Fatal("stream still open after drain")
	}
	if connect.CodeOf(stream.Err()) != connect.CodeUnavailable {
		t.Errorf("stream ended with %v, want Unavailable", stream.Err())
	}
}

func TestHealthAndMetrics(t *testing.T) {
	svc := newTestService(t, nil)
	httpClient, url := startServer(t, svc)

	health := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](
		httpClient, url+"/grpc.health.v1.Health/Check", connect.WithGRPC())
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		resp, err := health.CallUnary(context.Background(), connect.NewRequest(&healthpb.HealthCheckRequest{Service: admissionv1connect.AdmissionServiceName}))
		if err != nil {
			t.Fatalf("health check: %v", err)
		}
		return resp.Msg.Status
	}
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health = %v before drain, want SERVING", got)
	}

	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url)
	big := marshal(t, testfixture.Pod("big", "", "8Gi"))[0]
	for range 2 {
		if _, err := client.Admit(context.Background(), connect.NewRequest(&admissionv1.AdmitRequest{Pod: big})); err != nil {
			t.Fatal(err)
		}
	}
	_, err := client.Admit(context.Background(), connect.NewRequest(&admissionv1.AdmitRequest{Pod: []byte("junk")}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("junk pod: %v", err)
	}

	resp, err := httpClient.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`admission_admit_total{reason="OutOfmemory",result="rejected"} 2`,
		`admission_admit_total{reason="",result="invalid"} 1`,
		`admission_admit_duration_seconds_count{result="rejected"} 2`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	svc.Drain()
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health = %v after drain, want NOT_SERVING", got)
	}
}

func TestToConnectError(t *testing.T) {
	tests := []struct {
		desc string
		err  error
		want connect.Code
	}{
		{desc: "deadline", err: context.DeadlineExceeded, want: connect.CodeDeadlineExceeded},
		{desc: "connect error passes through", err: connect.NewError(connect.CodeAborted, errors.New("x")), want: connect.CodeAborted},
		{desc: "unknown is internal", err: errors.New("boom"), want: connect.CodeInternal},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := connect.CodeOf(toConnectError(tc.err)); got != tc.want {
				t.Errorf("code %v, want %v", got, tc.want)
			}
		})
	}
}
