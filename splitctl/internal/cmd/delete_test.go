package cmd

import (
	"strings"
	"testing"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/podfake"
)

func TestDelete(t *testing.T) {
	tests := []struct {
		desc      string
		args      []string
		removes   bool // the fake removes pods at once
		wantCode  int
		wantGrace *int64 // nil: the pod's own grace period
		wantOut   string
		wantErr   string
		noRequest bool
	}{
		{desc: "default grace period, waits until gone", args: []string{"delete", "pod", "web"}, removes: true, wantOut: `pod "web" deleted`},
		{desc: "--grace-period", args: []string{"delete", "pod", "web", "--grace-period=5", "--wait=false"}, wantGrace: i64(5), wantOut: `pod "web" deleted`},
		{desc: "--now means one second", args: []string{"delete", "pod/web", "--now", "--wait=false"}, wantGrace: i64(1), wantOut: `pod "web" deleted`},
		{desc: "--grace-period=0 without --force becomes 1", args: []string{"delete", "pod", "web", "--grace-period=0", "--wait=false"}, wantGrace: i64(1), wantOut: `pod "web" deleted`},
		{desc: "--force means 0 and says so", args: []string{"delete", "pod", "web", "--force"}, wantGrace: i64(0), wantOut: `pod "web" force deleted`,
			wantErr: "Warning: Immediate deletion does not wait for confirmation"},
		{desc: "--now with --grace-period is refused", args: []string{"delete", "pod", "web", "--now", "--grace-period=3"}, wantCode: 1,
			wantErr: "error: --now and --grace-period cannot be specified together", noRequest: true},
		{desc: "unknown pod", args: []string{"delete", "pod", "nope"}, wantCode: 1, wantErr: `Error from server (NotFound): pods "nope" not found`},
		{desc: "no name", args: []string{"delete", "pods"}, wantCode: 1, wantErr: "error: resource(s) were provided, but no name was specified", noRequest: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.RemoveOnDelete = tc.removes
			h.fake.SetPod(samplePod("default", "web"))
			r := h.run("", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			if strings.TrimSpace(r.stdout) != tc.wantOut {
				t.Errorf("stdout %q, want %q", r.stdout, tc.wantOut)
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
			req := podfake.LastRequest[*podv1.DeleteRequest](h.fake)
			if tc.noRequest {
				if req != nil {
					t.Errorf("a DeleteRequest was sent: %v", req)
				}
				return
			}
			if req == nil {
				t.Fatal("no DeleteRequest sent")
			}
			switch {
			case tc.wantGrace == nil && req.GracePeriodSeconds != nil:
				t.Errorf("grace_period_seconds = %d, want unset", req.GetGracePeriodSeconds())
			case tc.wantGrace != nil && (req.GracePeriodSeconds == nil || *tc.wantGrace != req.GetGracePeriodSeconds()):
				t.Errorf("grace_period_seconds = %v, want %d", req.GracePeriodSeconds, *tc.wantGrace)
			}
			if tc.wantCode == 0 && !tc.removes {
				p, ok := h.fake.Pod("default", "web")
				if !ok || p.DeletionTimestamp == nil {
					t.Errorf("pod not marked for deletion")
				}
			}
		})
	}
}
