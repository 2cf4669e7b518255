package syncloop

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/nodefeatures"
	"github.com/splitlet/splitlet/services/sync/internal/sysctl"
)

// withSysctls is testPod setting the named sysctls.
func withSysctls(name string, minute int, sysctls ...string) *v1.Pod {
	p := testPod(name, minute)
	p.Spec.SecurityContext = &v1.PodSecurityContext{}
	for _, s := range sysctls {
		p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: s, Value: "1"})
	}
	return p
}

// Sync refuses a pod setting a sysctl the node does not allow before any
// admitter is asked, whatever the admitter and its failure policy, as the
// kubelet's sysctl admit handler.
func TestPodsSyncRefusesItself(t *testing.T) {
	unavailable := fmt.Errorf("%w: connection refused", ErrAdmissionUnavailable)
	for _, tc := range []struct {
		desc string
		// allowedUnsafe are the operator's --allowed-unsafe-sysctls; nil
		// leaves Options.Sysctls to its default.
		allowedUnsafe []string
		batch         bool
		policy        FailurePolicy
		decide        func(*v1.Pod, []*v1.Pod) (AdmitResult, error)
		pods          []*v1.Pod
		wantStarted   []string
		wantRejected  map[string]string // pod: status message
		// wantReason is the refused pods' reason; "" means SysctlForbidden.
		wantReason string
		// wantAsked are the admitter's calls; "" for none.
		wantAsked string
	}{
		{
			desc: "an unsafe sysctl, admitter admitting all",
			pods: []*v1.Pod{withSysctls("unsafe", 1, "kernel.msgmax")},
			wantRejected: map[string]string{
				"unsafe": `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`,
			},
		},
		{
			desc:        "a safe sysctl is the admitter's to decide",
			pods:        []*v1.Pod{withSysctls("safe", 1, "kernel.shm_rmid_forced")},
			wantStarted: []string{"safe"}, wantAsked: "[{safe []}]",
		},
		{
			desc:          "an unsafe sysctl the operator allowed",
			allowedUnsafe: []string{"kernel.msg*"},
			pods:          []*v1.Pod{withSysctls("unsafe", 1, "kernel.msgmax")},
			wantStarted:   []string{"unsafe"}, wantAsked: "[{unsafe []}]",
		},
		{
			desc:   "admission down under policy Ignore still refuses it",
			policy: FailurePolicyIgnore,
			decide: func(*v1.Pod, []*v1.Pod) (AdmitResult, error) { return AdmitResult{}, unavailable },
			pods:   []*v1.Pod{withSysctls("unsafe", 1, "net.core.somaxconn"), testPod("plain", 2)},
			wantRejected: map[string]string{
				"unsafe": `Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted`,
			},
			wantStarted: []string{"plain"}, wantAsked: "[{plain []}]",
		},
		{
			desc: "a safe net sysctl of a host-network pod",
			pods: []*v1.Pod{func() *v1.Pod {
				p := withSysctls("hostnet", 1, "net.ipv4.ip_local_port_range")
				p.Spec.HostNetwork = true
				return p
			}()},
			wantRejected: map[string]string{
				"hostnet": `Pod was rejected: forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`,
			},
		},
		{
			desc: "a pod needing a feature the node does not declare",
			pods: []*v1.Pod{func() *v1.Pod {
				p := testPod("userns-hostnet", 1)
				p.Spec.HostNetwork, p.Spec.HostUsers = true, new(false)
				return p
			}()},
			wantReason: nodefeatures.UnsupportedReason,
			wantRejected: map[string]string{
				"userns-hostnet": "Pod was rejected: Pod requires node features that are not available: UserNamespacesHostNetworkSupport",
			},
		},
		{
			desc: "a pod needing a declared feature is the admitter's to decide",
			pods: []*v1.Pod{func() *v1.Pod {
				p := testPod("restart-all", 1)
				always := v1.ContainerRestartPolicyAlways
				p.Spec.Containers[0].RestartPolicy = &always
				p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{
					Action:    v1.ContainerRestartRuleActionRestartAllContainers,
					ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
				}}
				return p
			}()},
			wantStarted: []string{"restart-all"}, wantAsked: "[{restart-all []}]",
		},
		{
			desc:  "a batch leaves the refused pod out; the others are judged without it",
			batch: true,
			pods:  []*v1.Pod{testPod("a", 1), withSysctls("unsafe", 2, "kernel.sem"), testPod("c", 3)},
			wantRejected: map[string]string{
				"unsafe": `Pod was rejected: forbidden sysctl: "kernel.sem" not allowlisted`,
			},
			wantStarted: []string{"a", "c"}, wantAsked: "[{a,c []}]",
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			policy := tc.policy
			if policy == "" {
				policy = FailurePolicyFail
			}
			var h *admitHarness
			var asked func() []admitCall
			if tc.batch {
				var b *fakeBatchAdmitter
				h, b = newBatchAdmitHarness(t, policy)
				asked = b.batchLog
			} else {
				h = newAdmitHarness(t, policy)
				asked = h.ad.callLog
			}
			if tc.decide != nil {
				h.ad.setDecide(tc.decide)
			}
			if tc.allowedUnsafe != nil {
				w, err := sysctl.NewAllowlist(append(sysctl.SafeSysctlAllowlist(nil), tc.allowedUnsafe...))
				if err != nil {
					t.Fatal(err)
				}
				h.k.opts.Sysctls = w
			}
			h.k.HandlePodAdditions(context.Background(), tc.pods)

			want := tc.wantAsked
			if want == "" {
				want = "[]"
			}
			if got := fmt.Sprint(asked()); got != want {
				t.Errorf("admitter asked about %s, want %s", got, want)
			}
			for _, name := range tc.wantStarted {
				if uid := testPod(name, 0).UID; !h.k.workers.IsKnown(uid) {
					t.Errorf("pod %s has no worker", name)
				}
			}
			for name, msg := range tc.wantRejected {
				uid := testPod(name, 0).UID
				if h.k.workers.IsKnown(uid) {
					t.Errorf("refused pod %s has a worker", name)
				}
				reason := tc.wantReason
				if reason == "" {
					reason = sysctl.ForbiddenReason
				}
				s := h.status(t, uid)
				if s.Phase != v1.PodFailed || s.Reason != reason || s.Message != msg {
					t.Errorf("pod %s status %s/%s/%q, want Failed/%s/%q", name, s.Phase, s.Reason, s.Message, reason, msg)
				}
				if killed, _ := h.rt.state(uid); killed {
					t.Errorf("the runtime was asked about refused pod %s", name)
				}
			}
		})
	}
}
