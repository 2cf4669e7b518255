package predicate

import (
	"context"
	"errors"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

func staticNode(n *v1.Node) GetNodeFunc {
	return func(context.Context) (*v1.Node, error) { return n, nil }
}

type admitCase struct {
	desc        string
	pod         *v1.Pod
	others      []*v1.Pod
	node        func(*v1.Node)
	wantAdmit   bool
	wantReason  string
	wantMessage string
}

// memoInfos is an ActivePodInfoSource that summarises each pod object once,
// as splitlet-admission's active pod cache does; calls counts lookups.
type memoInfos struct {
	infos map[*v1.Pod]*ActivePodInfo
	calls int
}

var _ ActivePodInfoSource = (*memoInfos)(nil)

func (m *memoInfos) ActivePodInfos(pods []*v1.Pod, infos []*ActivePodInfo) {
	if m.infos == nil {
		m.infos = map[*v1.Pod]*ActivePodInfo{}
	}
	for i, pod := range pods {
		m.calls++
		if _, ok := m.infos[pod]; !ok {
			m.infos[pod] = NewActivePodInfo(pod)
		}
		infos[i] = m.infos[pod]
	}
}

// runAdmitCases runs every case without and with precomputed active pod
// summaries (twice with the same source, so the second run uses summaries
// made by the first): the decisions must not differ.
func runAdmitCases(t *testing.T, tests []admitCase) {
	t.Helper()
	for _, tc := range tests {
		for _, mode := range []string{"computed", "precomputed"} {
			t.Run(tc.desc+"/"+mode, func(t *testing.T) {
				node := testNode()
				if tc.node != nil {
					tc.node(node)
				}
				opts := Options{GetNode: staticNode(node), OS: "linux"}
				var memo *memoInfos
				rounds := 1
				if mode == "precomputed" {
					memo = &memoInfos{}
					opts.ActivePodInfos = memo
					rounds = 2
				}
				h := NewHandler(opts)
				for range rounds {
					checkAdmitCase(t, tc, h.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: tc.pod, OtherPods: tc.others}))
				}
				// Checks before the resources (OS, node) end an admission
				// before the active pods are looked at.
				if memo != nil && memo.calls != 0 && memo.calls != 2*len(tc.others) {
					t.Errorf("the summary source was asked %d times, want %d (once per active pod per admission)", memo.calls, 2*len(tc.others))
				}
			})
		}
	}
}

func checkAdmitCase(t *testing.T, tc admitCase, got lifecycle.PodAdmitResult) {
	t.Helper()
	if got.Admit != tc.wantAdmit {
		t.Fatalf("Admit = %v, want %v (reason %q, message %q)", got.Admit, tc.wantAdmit, got.Reason, got.Message)
	}
	if got.Reason != tc.wantReason {
		t.Errorf("Reason = %q, want %q", got.Reason, tc.wantReason)
	}
	if tc.wantMessage != "" && got.Message != tc.wantMessage {
		t.Errorf("Message = %q, want %q", got.Message, tc.wantMessage)
	}
}

func TestAdmitResources(t *testing.T) {
	runAdmitCases(t, []admitCase{
		{
			desc: "pod that fits is admitted", wantAdmit: true,
			pod:    mkPod("p", requests("cpu", "500m", "memory", "512Mi")),
			others: []*v1.Pod{mkPod("o", requests("cpu", "500m", "memory", "512Mi"))},
		},
		{
			desc: "cpu shortfall names requested, used and capacity in millicores",
			pod:  mkPod("p", requests("cpu", "2")), others: []*v1.Pod{mkPod("o", requests("cpu", "500m"))},
			wantReason:  "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 2000, used: 500, capacity: 1000",
		},
		{
			desc: "memory shortfall in bytes", pod: mkPod("p", requests("memory", "2Gi")),
			wantReason:  "OutOfmemory",
			wantMessage: "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824",
		},
		{
			desc:       "ephemeral-storage shortfall",
			pod:        mkPod("p", requests("ephemeral-storage", "6Gi")),
			others:     []*v1.Pod{mkPod("o", requests("ephemeral-storage", "5Gi"))},
			wantReason: "OutOfephemeral-storage",
			wantMessage: "Node didn't have enough resource: ephemeral-storage, requested: 6442450944, " +
				"used: 5368709120, capacity: 10737418240",
		},
		{
			desc: "pods capacity counts every active pod, even one requesting nothing",
			pod:  mkPod("p"), others: []*v1.Pod{mkPod("a"), mkPod("b"), mkPod("c")},
			wantReason:  "OutOfpods",
			wantMessage: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
		},
		{
			desc: "extended resource shortfall is OutOf<name>", pod: mkPod("p", requests("example.com/gpu", "3")),
			wantReason:  "OutOfexample.com/gpu",
			wantMessage: "Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, capacity: 2",
		},
		{
			desc:   "extended resource in use by other pods",
			pod:    mkPod("p", requests("example.com/gpu", "1")),
			others: []*v1.Pod{mkPod("o", requests("example.com/gpu", "2"))}, wantReason: "OutOfexample.com/gpu",
			wantMessage: "Node didn't have enough resource: example.com/gpu, requested: 1, used: 2, capacity: 2",
		},
		{
			desc: "extended resource the node does not advertise is ignored", wantAdmit: true,
			pod: mkPod("p", requests("example.com/fpga", "4", "cpu", "100m")),
		},
		{
			desc: "extended resource advertised at zero is checked", pod: mkPod("p", requests("example.com/zero", "1")),
			wantReason:  "OutOfexample.com/zero",
			wantMessage: "Node didn't have enough resource: example.com/zero, requested: 1, used: 0, capacity: 0",
		},
		{
			desc: "native hugepages the node lacks reject with capacity 0", pod: mkPod("p", requests("hugepages-1Gi", "1Gi")),
			wantReason:  "OutOfhugepages-1Gi",
			wantMessage: "Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0",
		},
		{
			desc:   "init container larger than the containers sets the request",
			pod:    mkPod("p", requests("cpu", "200m"), initContainer(false, "cpu", "900m")),
			others: []*v1.Pod{mkPod("o", requests("cpu", "500m"))}, wantReason: "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 900, used: 500, capacity: 1000",
		},
		{
			desc: "sidecar is added to containers and to later init containers",
			// steady: 300 sidecar + 300 main = 600; init phase: 300 sidecar + 500 init = 800.
			pod:    mkPod("p", requests("cpu", "300m"), initContainer(true, "cpu", "300m"), initContainer(false, "cpu", "500m")),
			others: []*v1.Pod{mkPod("o", requests("cpu", "300m"))}, wantReason: "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 800, used: 300, capacity: 1000",
		},
		{
			desc: "sidecar request just fits when init phase is smaller", wantAdmit: true,
			pod:    mkPod("p", requests("cpu", "300m"), initContainer(true, "cpu", "400m")),
			others: []*v1.Pod{mkPod("o", requests("cpu", "300m"))},
		},
		{
			desc:   "pod overhead is added to the request",
			pod:    mkPod("p", requests("cpu", "600m"), overhead("cpu", "300m")),
			others: []*v1.Pod{mkPod("o", requests("cpu", "200m"))}, wantReason: "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 900, used: 200, capacity: 1000",
		},
		{
			desc: "overhead and sidecars of active pods count as used",
			pod:  mkPod("p", requests("cpu", "600m")),
			others: []*v1.Pod{mkPod("o", requests("cpu", "100m"), overhead("cpu", "200m"),
				initContainer(true, "cpu", "200m"))}, wantReason: "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 600, used: 500, capacity: 1000",
		},
		{
			desc: "pod-level requests replace the container sum",
			pod:  mkPod("p", requests("cpu", "100m"), podLevelRequests("cpu", "1200m")), wantReason: "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 1200, used: 0, capacity: 1000",
		},
		{
			desc:       "resource failures are reported before node name",
			pod:        mkPod("p", requests("memory", "4Gi", "cpu", "4"), nodeName("other")),
			wantReason: "OutOfcpu",
		},
	})
}

func TestAdmitNodeAffinityAndName(t *testing.T) {
	affMsg := "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	runAdmitCases(t, []admitCase{
		{desc: "node selector matching", pod: mkPod("p", nodeSelector("zone", "z1")), wantAdmit: true},
		{
			desc: "node selector not matching", pod: mkPod("p", nodeSelector("zone", "z2")),
			wantReason: "NodeAffinity", wantMessage: affMsg,
		},
		{desc: "affinity In", pod: mkPod("p", requiredAffinity(labelTerm("zone", v1.NodeSelectorOpIn, "z0", "z1"))), wantAdmit: true},
		{
			desc: "affinity NotIn", pod: mkPod("p", requiredAffinity(labelTerm("zone", v1.NodeSelectorOpNotIn, "z1"))),
			wantReason: "NodeAffinity", wantMessage: affMsg,
		},
		{desc: "affinity Exists", pod: mkPod("p", requiredAffinity(labelTerm("gen", v1.NodeSelectorOpExists))), wantAdmit: true},
		{
			desc:       "affinity DoesNotExist",
			pod:        mkPod("p", requiredAffinity(labelTerm("gen", v1.NodeSelectorOpDoesNotExist))),
			wantReason: "NodeAffinity",
		},
		{desc: "affinity Gt", pod: mkPod("p", requiredAffinity(labelTerm("gen", v1.NodeSelectorOpGt, "4"))), wantAdmit: true},
		{
			desc: "affinity Lt", pod: mkPod("p", requiredAffinity(labelTerm("gen", v1.NodeSelectorOpLt, "5"))),
			wantReason: "NodeAffinity",
		},
		{
			desc: "affinity terms are ORed", wantAdmit: true,
			pod: mkPod("p", requiredAffinity(labelTerm("zone", v1.NodeSelectorOpIn, "z9"), labelTerm("zone", v1.NodeSelectorOpIn, "z1"))),
		},
		{
			desc: "affinity matchFields on metadata.name", wantAdmit: true,
			pod: mkPod("p", requiredAffinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-a"}}}})),
		},
		{
			desc:       "selector and affinity must both match",
			pod:        mkPod("p", nodeSelector("zone", "z1"), requiredAffinity(labelTerm("zone", v1.NodeSelectorOpIn, "z2"))),
			wantReason: "NodeAffinity",
		},
		{
			desc:       "invalid affinity operator value does not match",
			pod:        mkPod("p", requiredAffinity(labelTerm("gen", v1.NodeSelectorOpGt, "not-a-number"))),
			wantReason: "NodeAffinity",
		},
		{desc: "node name matching", pod: mkPod("p", nodeName("node-a")), wantAdmit: true},
		{
			desc: "node name of another node", pod: mkPod("p", nodeName("node-b")), wantReason: "NodeName",
			wantMessage: "Predicate NodeName failed: node(s) didn't match the requested node name",
		},
	})
}

func TestAdmitHostPorts(t *testing.T) {
	portMsg := "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	runAdmitCases(t, []admitCase{
		{
			desc: "same port, default protocol and address", wantReason: "NodePorts", wantMessage: portMsg,
			pod: mkPod("p", hostPort(8080, "", "")), others: []*v1.Pod{mkPod("o", hostPort(8080, v1.ProtocolTCP, ""))},
		},
		{
			desc: "same port, different protocol", wantAdmit: true,
			pod: mkPod("p", hostPort(8080, v1.ProtocolUDP, "")), others: []*v1.Pod{mkPod("o", hostPort(8080, "", ""))},
		},
		{
			desc: "different port", wantAdmit: true,
			pod: mkPod("p", hostPort(8081, "", "")), others: []*v1.Pod{mkPod("o", hostPort(8080, "", ""))},
		},
		{
			desc: "specific address against 0.0.0.0", wantReason: "NodePorts",
			pod: mkPod("p", hostPort(53, v1.ProtocolUDP, "10.0.0.1")), others: []*v1.Pod{mkPod("o", hostPort(53, v1.ProtocolUDP, "0.0.0.0"))},
		},
		{
			desc: "0.0.0.0 against a specific address", wantReason: "NodePorts",
			pod: mkPod("p", hostPort(53, v1.ProtocolUDP, "")), others: []*v1.Pod{mkPod("o", hostPort(53, v1.ProtocolUDP, "127.0.0.1"))},
		},
		{
			desc: "two different specific addresses", wantAdmit: true,
			pod: mkPod("p", hostPort(53, "", "10.0.0.1")), others: []*v1.Pod{mkPod("o", hostPort(53, "", "10.0.0.2"))},
		},
		{
			desc: "the same specific address", wantReason: "NodePorts",
			pod: mkPod("p", hostPort(53, "", "10.0.0.1")), others: []*v1.Pod{mkPod("o", hostPort(53, "", "10.0.0.1"))},
		},
		{
			desc: "an active pod's sidecar holds its host port", wantReason: "NodePorts",
			pod: mkPod("p", hostPort(9000, "", "")), others: []*v1.Pod{mkPod("o", initHostPort(true, 9000))},
		},
		{
			desc: "an active pod's plain init container has released its host port", wantAdmit: true,
			pod: mkPod("p", hostPort(9000, "", "")), others: []*v1.Pod{mkPod("o", initHostPort(false, 9000))},
		},
		{
			desc: "the new pod's sidecar port is checked", wantReason: "NodePorts",
			pod: mkPod("p", initHostPort(true, 9000)), others: []*v1.Pod{mkPod("o", hostPort(9000, "", ""))},
		},
	})
}

func TestAdmitTaints(t *testing.T) {
	taint := func(effect v1.TaintEffect) func(*v1.Node) {
		return func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: effect}} }
	}
	taintMsg := "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
	runAdmitCases(t, []admitCase{
		{
			desc: "untolerated NoExecute taint rejects", pod: mkPod("p"), node: taint(v1.TaintEffectNoExecute),
			wantReason: "TaintToleration", wantMessage: taintMsg,
		},
		{desc: "untolerated NoSchedule taint is the scheduler's business", pod: mkPod("p"), node: taint(v1.TaintEffectNoSchedule), wantAdmit: true},
		{desc: "untolerated PreferNoSchedule taint admits", pod: mkPod("p"), node: taint(v1.TaintEffectPreferNoSchedule), wantAdmit: true},
		{
			desc: "NoExecute tolerated by key and value", node: taint(v1.TaintEffectNoExecute), wantAdmit: true,
			pod: mkPod("p", tolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db", Effect: v1.TaintEffectNoExecute})),
		},
		{
			desc: "NoExecute with the wrong value is not tolerated", node: taint(v1.TaintEffectNoExecute), wantReason: "TaintToleration",
			pod: mkPod("p", tolerations(v1.Toleration{Key: "dedicated", Value: "web"})),
		},
		{
			desc: "NoExecute tolerated by an empty-key Exists toleration", node: taint(v1.TaintEffectNoExecute), wantAdmit: true,
			pod: mkPod("p", tolerations(v1.Toleration{Operator: v1.TolerationOpExists})),
		},
		{
			desc: "toleration for NoSchedule does not cover NoExecute", node: taint(v1.TaintEffectNoExecute), wantReason: "TaintToleration",
			pod: mkPod("p", tolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
		},
		{
			desc: "static pod ignores NoExecute taints", node: taint(v1.TaintEffectNoExecute), wantAdmit: true,
			pod: mkPod("p", annotation(lifecycle.ConfigSourceAnnotationKey, "file")),
		},
		{
			desc: "mirror pod is not exempt from NoExecute taints", node: taint(v1.TaintEffectNoExecute), wantReason: "TaintToleration",
			pod: mkPod("p", annotation(lifecycle.ConfigMirrorAnnotationKey, "x"), annotation(lifecycle.ConfigSourceAnnotationKey, "api")),
		},
	})
}

func TestAdmitOSAndFeatures(t *testing.T) {
	runAdmitCases(t, []admitCase{
		{
			desc: "kubernetes.io/os pod label for another OS", pod: mkPod("p", podLabel(v1.LabelOSStable, "windows")),
			wantReason:  "PodOSSelectorNodeLabelDoesNotMatch",
			wantMessage: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
		},
		{
			desc: "pod label compared with the real OS even if the node label lies", wantAdmit: true,
			pod:  mkPod("p", podLabel(v1.LabelOSStable, "linux")),
			node: func(n *v1.Node) { n.Labels[v1.LabelOSStable] = "windows" },
		},
		{
			desc: "spec.os for another OS", pod: mkPod("p", podOS(v1.Windows)),
			wantReason: "PodOSNotSupported", wantMessage: "Failed to admit pod as the OS field doesn't match node OS",
		},
		{desc: "spec.os linux", pod: mkPod("p", podOS(v1.Linux)), wantAdmit: true},
		{
			desc: "OS is checked before resources", pod: mkPod("p", podOS(v1.Windows), requests("cpu", "8")),
			wantReason: "PodOSNotSupported",
		},
		{
			desc: "supplementalGroupsPolicy Strict on a node without support", pod: mkPod("p", strictGroups()),
			wantReason:  "SupplementalGroupsPolicyNotSupported",
			wantMessage: "SupplementalGroupsPolicy=Strict is not supported in this node",
		},
		{
			desc: "supplementalGroupsPolicy Strict on a node with support", pod: mkPod("p", strictGroups()), wantAdmit: true,
			node: func(n *v1.Node) {
				yes := true
				n.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &yes}
			},
		},
	})
}

func TestAdmitInvalidNode(t *testing.T) {
	tests := []struct {
		desc    string
		getNode GetNodeFunc
	}{
		{desc: "getter error", getNode: func(context.Context) (*v1.Node, error) { return nil, errors.New("boom") }},
		{desc: "nil node", getNode: func(context.Context) (*v1.Node, error) { return nil, nil }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := NewHandler(Options{GetNode: tc.getNode}).Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: mkPod("p")})
			if got.Admit || got.Reason != "InvalidNodeInfo" || got.Message != "Kubelet cannot get node info." {
				t.Fatalf("got %+v, want InvalidNodeInfo rejection", got)
			}
		})
	}
}

// fakeFailureHandler records what it was given and answers as told.
type fakeFailureHandler struct {
	gotReasons []lifecycle.PredicateFailureReason
	remaining  []lifecycle.PredicateFailureReason
	victims    []*v1.Pod
	err        error
}

var _ lifecycle.AdmissionFailureHandler = (*fakeFailureHandler)(nil)

func (f *fakeFailureHandler) HandleAdmissionFailure(_ context.Context, _ *lifecycle.PodAdmitAttributes, reasons []lifecycle.PredicateFailureReason) ([]lifecycle.PredicateFailureReason, []*v1.Pod, error) {
	f.gotReasons = reasons
	return f.remaining, f.victims, f.err
}

func TestAdmitFailureHandler(t *testing.T) {
	victim := mkPod("victim", requests("cpu", "500m"))
	tests := []struct {
		desc        string
		fake        *fakeFailureHandler
		wantAdmit   bool
		wantReason  string
		wantMessage string
		wantVictims int
	}{
		{
			desc: "victims turn the failure into a rejection carrying them",
			fake: &fakeFailureHandler{victims: []*v1.Pod{victim}}, wantReason: "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 800, used: 500, capacity: 1000", wantVictims: 1,
		},
		{
			desc: "remaining reasons are reported",
			fake: &fakeFailureHandler{remaining: []lifecycle.PredicateFailureReason{
				&lifecycle.PredicateFailureError{PredicateName: NodeNameName, PredicateDesc: ErrReasonNodeName}}},
			wantReason: "NodeName",
		},
		{
			desc: "recovery error is UnexpectedAdmissionError",
			fake: &fakeFailureHandler{err: errors.New("no luck")}, wantReason: "UnexpectedAdmissionError",
			wantMessage: "Unexpected error while attempting to recover from admission failure: no luck",
		},
		{desc: "nothing remaining and no victims admits", fake: &fakeFailureHandler{}, wantAdmit: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := NewHandler(Options{GetNode: staticNode(testNode()), OS: "linux", FailureHandler: tc.fake})
			got := h.Admit(context.Background(), &lifecycle.PodAdmitAttributes{
				Pod: mkPod("p", requests("cpu", "800m")), OtherPods: []*v1.Pod{victim},
			})
			if len(tc.fake.gotReasons) != 1 || tc.fake.gotReasons[0].GetReason() != "Insufficient cpu" {
				t.Fatalf("failure handler got %v, want one Insufficient cpu", tc.fake.gotReasons)
			}
			if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason || len(got.Victims) != tc.wantVictims {
				t.Fatalf("got %+v, want admit=%v reason=%q victims=%d", got, tc.wantAdmit, tc.wantReason, tc.wantVictims)
			}
			if tc.wantMessage != "" && got.Message != tc.wantMessage {
				t.Errorf("Message = %q, want %q", got.Message, tc.wantMessage)
			}
		})
	}
}

func TestAdmitDoesNotMutateInputs(t *testing.T) {
	pod := mkPod("p", requests("example.com/fpga", "1"))
	node := testNode()
	nodeBefore := node.DeepCopy()
	h := NewHandler(Options{GetNode: staticNode(node), OS: "linux"})
	if res := h.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: pod}); !res.Admit {
		t.Fatalf("unexpected rejection %+v", res)
	}
	// GetNode's node is shared (nodeinfo.Static.Shared): only read.
	if !reflect.DeepEqual(node, nodeBefore) {
		t.Errorf("Admit changed the node: %+v, was %+v", node, nodeBefore)
	}
	if _, ok := pod.Spec.Containers[0].Resources.Requests["example.com/fpga"]; !ok {
		t.Error("Admit removed the unknown extended resource from the caller's pod")
	}
}

// fixedInfos answers every lookup with the same summary.
type fixedInfos struct{ info *ActivePodInfo }

var _ ActivePodInfoSource = fixedInfos{}

func (f fixedInfos) ActivePodInfos(_ []*v1.Pod, infos []*ActivePodInfo) {
	for i := range infos {
		infos[i] = f.info
	}
}

// TestAdmitUsesActivePodInfos shows the handler counts what the source says
// an active pod holds rather than recomputing it: a summary of a pod asking
// for more cpu than the node has makes a pod that would fit beside the real
// one fail, and a nil summary falls back to the pod itself.
func TestAdmitUsesActivePodInfos(t *testing.T) {
	big := NewActivePodInfo(mkPod("big", requests("cpu", "64")))
	for _, tc := range []struct {
		desc       string
		source     ActivePodInfoSource
		wantAdmit  bool
		wantReason string
	}{
		{desc: "no source computes from the pod", wantAdmit: true},
		{desc: "nil summary computes from the pod", source: fixedInfos{}, wantAdmit: true},
		{desc: "the summary is what counts", source: fixedInfos{info: big}, wantReason: "OutOfcpu"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			h := NewHandler(Options{GetNode: staticNode(testNode()), OS: "linux", ActivePodInfos: tc.source})
			got := h.Admit(context.Background(), &lifecycle.PodAdmitAttributes{
				Pod:       mkPod("p", requests("cpu", "100m")),
				OtherPods: []*v1.Pod{mkPod("small", requests("cpu", "100m"))},
			})
			if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason {
				t.Errorf("Admit = %v %q, want %v %q", got.Admit, got.Reason, tc.wantAdmit, tc.wantReason)
			}
		})
	}
}

func TestRemoveMissingExtendedResources(t *testing.T) {
	node := testNode()
	t.Run("nothing missing: the pod itself", func(t *testing.T) {
		pod := mkPod("p", requests("cpu", "1", "example.com/gpu", "1"), initContainer(false, "example.com/zero", "1"))
		if got := removeMissingExtendedResources(pod, node); got != pod {
			t.Error("got a copy of a pod with nothing to drop")
		}
	})
	t.Run("missing in an init container: a copy without it", func(t *testing.T) {
		pod := mkPod("p", requests("cpu", "1"), initContainer(true, "example.com/fpga", "1", "memory", "1Mi"))
		got := removeMissingExtendedResources(pod, node)
		if got == pod {
			t.Fatal("got the caller's pod, want a copy")
		}
		want := list("memory", "1Mi")
		if r := got.Spec.InitContainers[0].Resources.Requests; len(r) != len(want) || !r.Memory().Equal(*want.Memory()) {
			t.Errorf("init container requests = %v, want %v", r, want)
		}
		if got.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" {
			t.Errorf("regular container requests = %v, want cpu 1 kept", got.Spec.Containers[0].Resources.Requests)
		}
		if _, ok := pod.Spec.InitContainers[0].Resources.Requests["example.com/fpga"]; !ok {
			t.Error("the caller's pod lost its request")
		}
	})
}
