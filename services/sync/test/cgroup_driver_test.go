package test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A sandbox's cgroup parent is named after the cgroup driver the runtime
// reports in CRI RuntimeConfig, as the kubelet's getCgroupDriverFromCRI
// has it: a runtime on systemd gets the pod's slice, one on cgroupfs its
// /kubepods path, whatever sync's --cgroup-driver says.
func TestSandboxCgroupParentFollowsRuntimeDriver(t *testing.T) {
	for _, tc := range []struct {
		desc        string
		gatewayArgs []string
		syncArgs    []string
		wantPrefix  string
	}{
		{desc: "cgroupfs runtime", syncArgs: []string{"--cgroup-driver=systemd"}, wantPrefix: "/kubepods/besteffort/pod"},
		{desc: "systemd runtime", gatewayArgs: []string{"--fake-cgroup-driver=systemd"},
			wantPrefix: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s := startStack(t, stackOptions{gatewayArgs: tc.gatewayArgs, syncArgs: tc.syncArgs})
			uid := s.apply(bestEffortPod).GetPods()[0].GetUid()
			waitFor(t, 30*time.Second, "the pod's sandbox", func() (bool, string) { return s.sandboxesOf(uid) > 0, "" })
			var parent string
			for _, sb := range s.sandboxes() {
				if sb.GetLabels()["io.kubernetes.pod.uid"] != uid {
					continue
				}
				resp, err := s.cri.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetId(), Verbose: true})
				if err != nil {
					t.Fatal(err)
				}
				var info struct {
					Config struct {
						Linux struct {
							CgroupParent string `json:"cgroupParent"`
						} `json:"linux"`
					} `json:"config"`
				}
				if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
					t.Fatal(err)
				}
				parent = info.Config.Linux.CgroupParent
			}
			want := tc.wantPrefix + uid
			if tc.gatewayArgs != nil {
				want = tc.wantPrefix + strings.ReplaceAll(uid, "-", "_") + ".slice"
			}
			if parent != want {
				t.Errorf("sandbox cgroup parent %q, want %q", parent, want)
			}
		})
	}
}
