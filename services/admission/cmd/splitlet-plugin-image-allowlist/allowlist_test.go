package main

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/plugin"
)

func pod(init, regular, ephemeral []string) *v1.Pod {
	p := &v1.Pod{}
	for i, img := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init" + string(rune('0'+i)), Image: img})
	}
	for i, img := range regular {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "app" + string(rune('0'+i)), Image: img})
	}
	for i, img := range ephemeral {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug" + string(rune('0'+i)), Image: img},
		})
	}
	return p
}

func TestAllowlist(t *testing.T) {
	tests := []struct {
		desc      string
		allowlist string
		pod       *v1.Pod
		wantAdmit bool
		// wantInMessage are substrings of the rejection message.
		wantInMessage []string
	}{
		{desc: "all images allowed", allowlist: "registry.local/,docker.io/library/", pod: pod([]string{"registry.local/init"}, []string{"docker.io/library/nginx:1", "registry.local/app"}, nil), wantAdmit: true},
		{desc: "spaces around prefixes are ignored", allowlist: " registry.local/ , ", pod: pod(nil, []string{"registry.local/app"}, nil), wantAdmit: true},
		{desc: "regular container rejected", allowlist: "registry.local/", pod: pod(nil, []string{"registry.local/ok", "evil.io/miner"}, nil), wantInMessage: []string{`container "app1"`, `"evil.io/miner"`, "registry.local/"}},
		{desc: "init container rejected", allowlist: "registry.local/", pod: pod([]string{"evil.io/init"}, []string{"registry.local/ok"}, nil), wantInMessage: []string{`init container "init0"`, `"evil.io/init"`}},
		{desc: "ephemeral container rejected", allowlist: "registry.local/", pod: pod(nil, []string{"registry.local/ok"}, []string{"busybox"}), wantInMessage: []string{`ephemeral container "debug0"`, `"busybox"`}},
		{desc: "prefix must match from the start", allowlist: "registry.local/", pod: pod(nil, []string{"evil.io/registry.local/app"}, nil), wantInMessage: []string{"evil.io/registry.local/app"}},
		{desc: "empty allowlist allows nothing", allowlist: "", pod: pod(nil, []string{"registry.local/app"}, nil), wantInMessage: []string{"SPLITLET_IMAGE_ALLOWLIST is empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			resp, err := newAllowlist(tc.allowlist).Admit(context.Background(), &plugin.Request{Pod: tc.pod})
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if resp.Admit != tc.wantAdmit {
				t.Fatalf("Admit = %+v, want admit=%v", resp, tc.wantAdmit)
			}
			if tc.wantAdmit {
				return
			}
			if resp.Reason != ReasonImageNotAllowed {
				t.Errorf("reason = %q, want %q", resp.Reason, ReasonImageNotAllowed)
			}
			for _, s := range tc.wantInMessage {
				if !strings.Contains(resp.Message, s) {
					t.Errorf("message %q does not contain %q", resp.Message, s)
				}
			}
		})
	}
}

// TestAllowlistOverGRPC runs the plugin behind the SDK's in-process gRPC
// harness, as the host reaches it.
func TestAllowlistOverGRPC(t *testing.T) {
	client := plugin.TestClient(t, newAllowlist("registry.local/"))
	resp, err := client.Admit(context.Background(), &plugin.Request{Pod: pod(nil, []string{"quay.io/x"}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Admit || resp.Reason != ReasonImageNotAllowed {
		t.Errorf("Admit = %+v, want an ImageNotAllowed rejection", resp)
	}
	info, err := client.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "image-allowlist" {
		t.Errorf("Describe name = %q, want image-allowlist", info.Name)
	}
}
