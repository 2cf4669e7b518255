package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/admission/plugin"
)

// recorder is a hand-written fake plugin: it remembers the last request it
// was given and answers with a scripted response or error.
type recorder struct {
	mu   sync.Mutex
	got  *plugin.Request
	resp *plugin.Response
	err  error
	wait time.Duration
	info *plugin.Info
}

var _ plugin.AdmissionPlugin = (*recorder)(nil)

func (r *recorder) Admit(ctx context.Context, req *plugin.Request) (*plugin.Response, error) {
	r.mu.Lock()
	r.got = req
	r.mu.Unlock()
	if r.wait > 0 {
		select {
		case <-time.After(r.wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.resp, r.err
}

func (r *recorder) last() *plugin.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got
}

// describer adds the optional Describer capability to recorder.
type describer struct{ *recorder }

func (d describer) Describe(context.Context) (plugin.Info, error) { return *d.info, nil }

// richPod sets fields of many kinds (maps, quantities, times, pointers,
// nested structs, ephemeral containers, status) so that a lossy encoding
// would show.
func richPod(name string) *v1.Pod {
	grace := int64(17)
	prio := int32(2000001000)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: types.UID("uid-" + name),
			ResourceVersion: "42", Generation: 3,
			Labels:            map[string]string{"app": "web", "tier": "front"},
			Annotations:       map[string]string{"kubernetes.io/config.source": "file"},
			CreationTimestamp: metav1.NewTime(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs"}},
		},
		Spec: v1.PodSpec{
			NodeName:                      "node-1",
			PriorityClassName:             "system-node-critical",
			Priority:                      &prio,
			TerminationGracePeriodSeconds: &grace,
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:                   []v1.Toleration{{Key: "node.kubernetes.io/memory-pressure", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			InitContainers:                []v1.Container{{Name: "init", Image: "registry.local/init:1"}},
			Containers: []v1.Container{{
				Name: "app", Image: "registry.local/app@sha256:0123", Command: []string{"/app"}, Args: []string{"--x"},
				Ports: []v1.ContainerPort{{ContainerPort: 8080, HostPort: 80, Protocol: v1.ProtocolTCP}},
				Env:   []v1.EnvVar{{Name: "A", Value: "b"}},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("128Mi")},
				},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz"}}, PeriodSeconds: 5},
			}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}, TargetContainerName: "app"}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable, PodIP: "10.0.0.7"},
	}
}

func richNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/os": "linux"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoExecute}}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse}},
		},
	}
}

func mustMarshal(t *testing.T, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAdmitRoundTrip crosses the real gRPC boundary (TestPluginGRPCConn) and
// checks that the plugin sees the very objects the host sent and the host
// sees the very answer the plugin gave.
func TestAdmitRoundTrip(t *testing.T) {
	tests := []struct {
		desc string
		req  *plugin.Request
		resp *plugin.Response
	}{
		{
			desc: "admit with active pods and node",
			req:  &plugin.Request{Pod: richPod("new"), ActivePods: []*v1.Pod{richPod("a"), richPod("b")}, Node: richNode()},
			resp: &plugin.Response{Admit: true},
		},
		{
			desc: "reject keeps reason and message",
			req:  &plugin.Request{Pod: richPod("new"), ActivePods: []*v1.Pod{richPod("a")}},
			resp: &plugin.Response{Reason: "ImageNotAllowed", Message: `container "app" image "x" is not allowed`},
		},
		{
			desc: "no node and no active pods",
			req:  &plugin.Request{Pod: richPod("lonely")},
			resp: &plugin.Response{Admit: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			fake := &recorder{resp: tc.resp}
			client := plugin.TestClient(t, fake)

			got, err := client.Admit(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if *got != *tc.resp {
				t.Errorf("response = %+v, want %+v", *got, *tc.resp)
			}

			seen := fake.last()
			if seen == nil {
				t.Fatal("plugin was not called")
			}
			assertSamePod(t, "pod", seen.Pod, tc.req.Pod)
			if len(seen.ActivePods) != len(tc.req.ActivePods) {
				t.Fatalf("plugin saw %d active pods, want %d", len(seen.ActivePods), len(tc.req.ActivePods))
			}
			for i := range tc.req.ActivePods {
				assertSamePod(t, "active pod", seen.ActivePods[i], tc.req.ActivePods[i])
			}
			switch {
			case tc.req.Node == nil && seen.Node != nil:
				t.Errorf("plugin saw node %q, want none", seen.Node.Name)
			case tc.req.Node != nil && !apiequality.Semantic.DeepEqual(seen.Node, tc.req.Node):
				t.Errorf("node changed in transit:\n got %+v\nwant %+v", seen.Node, tc.req.Node)
			}
		})
	}
}

func assertSamePod(t *testing.T, what string, got, want *v1.Pod) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s %s changed in transit:\n got %+v\nwant %+v", what, want.Name, got, want)
	}
	// Byte equality of the re-encoding catches fields Semantic equality
	// might forgive (the k8s encoder sorts map keys, so it is stable).
	if !bytes.Equal(mustMarshal(t, got), mustMarshal(t, want)) {
		t.Errorf("%s %s re-encodes differently", what, want.Name)
	}
}

// TestAdmitErrors checks the error contract: a plugin error reaches the host
// as an error carrying a status code, never as a decision.
func TestAdmitErrors(t *testing.T) {
	tests := []struct {
		desc     string
		fake     *recorder
		timeout  time.Duration
		wantCode codes.Code
		wantText string
	}{
		{desc: "plain error becomes Unknown", fake: &recorder{err: errors.New("policy store down")}, wantCode: codes.Unknown, wantText: "policy store down"},
		{desc: "status error keeps its code", fake: &recorder{err: status.Error(codes.Unavailable, "backend gone")}, wantCode: codes.Unavailable, wantText: "backend gone"},
		{desc: "nil response is Internal", fake: &recorder{}, wantCode: codes.Internal, wantText: "neither a response nor an error"},
		{desc: "slow plugin hits the deadline", fake: &recorder{wait: 5 * time.Second, resp: &plugin.Response{Admit: true}}, timeout: 50 * time.Millisecond, wantCode: codes.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			client := plugin.TestClient(t, tc.fake)
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			got, err := client.Admit(ctx, &plugin.Request{Pod: richPod("p")})
			if err == nil {
				t.Fatalf("Admit = %+v, want an error", got)
			}
			if code := status.Code(err); code != tc.wantCode {
				t.Errorf("code = %v, want %v (err %v)", code, tc.wantCode, err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not contain %q", err, tc.wantText)
			}
		})
	}
}

func TestEncodeRequestRefusesMissingPod(t *testing.T) {
	if _, err := plugin.EncodeRequest(&plugin.Request{}); err == nil {
		t.Fatal("EncodeRequest without a pod succeeded")
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		desc string
		impl plugin.AdmissionPlugin
		want plugin.Info
	}{
		{desc: "plugin with Describer", impl: describer{&recorder{info: &plugin.Info{Name: "image-allowlist", Version: "1.2.3"}}}, want: plugin.Info{Name: "image-allowlist", Version: "1.2.3"}},
		{desc: "plugin without Describer", impl: &recorder{}, want: plugin.Info{}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := plugin.TestClient(t, tc.impl).Describe(context.Background())
			if err != nil {
				t.Fatalf("Describe: %v", err)
			}
			if got != tc.want {
				t.Errorf("Describe = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// BenchmarkCodec110 measures encoding and decoding a request with 110
// active pods, the part of an out-of-process admission that grows with the
// node's pod count.
func BenchmarkCodec110(b *testing.B) {
	req := &plugin.Request{Pod: richPod("new"), Node: richNode()}
	for i := 0; i < 110; i++ {
		req.ActivePods = append(req.ActivePods, richPod("active"))
	}
	b.ReportAllocs()
	for b.Loop() {
		in, err := plugin.EncodeRequest(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plugin.DecodeRequest(in); err != nil {
			b.Fatal(err)
		}
	}
}
