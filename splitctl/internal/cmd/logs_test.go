package cmd

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/podfake"
)

func i64(v int64) *int64 { return &v }

func TestLogsFlagsToRequest(t *testing.T) {
	sinceTime := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		desc     string
		args     []string
		want     *podv1.LogsRequest
		wantCode int
		wantErr  string
	}{
		{
			desc: "defaults: no tail, no limits",
			args: []string{"logs", "web"},
			want: &podv1.LogsRequest{Namespace: "default", Name: "web"},
		},
		{
			desc: "every flag",
			args: []string{"logs", "pod/web", "-n", "prod", "-c", "side", "-f", "-p", "--tail", "20", "--timestamps", "--limit-bytes", "100", "--since", "90s"},
			want: &podv1.LogsRequest{Namespace: "prod", Name: "web", Container: "side", Follow: true, Previous: true,
				TailLines: i64(20), Timestamps: true, LimitBytes: i64(100), SinceSeconds: i64(90)},
		},
		{
			desc: "--tail=0 is sent (zero lines), --since rounds up to a second",
			args: []string{"logs", "web", "--tail=0", "--since=1500ms"},
			want: &podv1.LogsRequest{Namespace: "default", Name: "web", TailLines: i64(0), SinceSeconds: i64(2)},
		},
		{
			desc: "--since-time",
			args: []string{"logs", "web", "--since-time", "2026-03-04T09:00:00Z"},
			want: &podv1.LogsRequest{Namespace: "default", Name: "web", SinceTime: timestamppb.New(sinceTime)},
		},
		{
			desc: "container as the second argument",
			args: []string{"logs", "web", "side"},
			want: &podv1.LogsRequest{Namespace: "default", Name: "web", Container: "side"},
		},
		{
			desc:     "--since with --since-time is refused before any request",
			args:     []string{"logs", "web", "--since", "1m", "--since-time", "2026-03-04T09:00:00Z"},
			wantCode: 1,
			wantErr:  "error: at most one of `sinceTime` or `sinceSeconds` may be specified",
		},
		{
			desc:     "--tail below -1",
			args:     []string{"logs", "web", "--tail", "-2"},
			wantCode: 1,
			wantErr:  "error: --tail must be greater than or equal to -1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.SetPod(samplePod("default", "web"))
			p2 := samplePod("prod", "web")
			p2.Spec.Containers = append(p2.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
			h.fake.SetPod(p2)
			h.fake.SetLog("prod", "web", "side", true, "")
			r := h.run("", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			got := podfake.LastRequest[*podv1.LogsRequest](h.fake)
			if tc.want == nil {
				if got != nil {
					t.Errorf("a LogsRequest was sent: %v", got)
				}
			} else if !proto.Equal(got, tc.want) {
				t.Errorf("LogsRequest = %v, want %v", got, tc.want)
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
		})
	}
}

func TestLogsOutput(t *testing.T) {
	tests := []struct {
		desc     string
		args     []string
		want     string
		wantCode int
		wantErr  string
	}{
		{desc: "whole log", args: []string{"logs", "web"}, want: "one\ntwo\nthree\n"},
		{desc: "tail 2 with timestamps", args: []string{"logs", "web", "--tail=2", "--timestamps"},
			want: "2026-03-04T09:00:02Z two\n2026-03-04T09:00:03Z three\n"},
		{desc: "previous instance", args: []string{"logs", "web", "-p"}, want: "before crash\n"},
		{desc: "multi-container pod without -c is the server's error, exit 1", args: []string{"logs", "multi"}, wantCode: 1,
			wantErr: "Error from server (BadRequest): a container name must be specified for pod multi, choose one of: [a b]"},
		{desc: "unknown pod", args: []string{"logs", "nope"}, wantCode: 1, wantErr: `Error from server (NotFound): pods "nope" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.SetPod(samplePod("default", "web"))
			multi := samplePod("default", "multi")
			multi.Spec.Containers = []corev1.Container{{Name: "a", Image: "x"}, {Name: "b", Image: "x"}}
			h.fake.SetPod(multi)
			h.fake.SetLog("default", "web", "web", false, "2026-03-04T09:00:01Z one\n2026-03-04T09:00:02Z two\n2026-03-04T09:00:03Z three\n")
			h.fake.SetLog("default", "web", "web", true, "2026-03-04T08:00:00Z before crash\n")
			r := h.run("", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			if r.stdout != tc.want {
				t.Errorf("stdout %q, want %q", r.stdout, tc.want)
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
		})
	}
}
