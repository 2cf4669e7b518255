package cmd

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/podfake"
)

func TestExec(t *testing.T) {
	tests := []struct {
		desc     string
		args     []string
		result   *podv1.ExecSyncResponse
		wantReq  *podv1.ExecSyncRequest
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{
			desc:    "command after --, output passed through",
			args:    []string{"exec", "web", "--", "echo", "hi"},
			result:  &podv1.ExecSyncResponse{Stdout: []byte("hi\n")},
			wantReq: &podv1.ExecSyncRequest{Namespace: "default", Name: "web", Command: []string{"echo", "hi"}},
			wantOut: "hi\n",
		},
		{
			desc:    "container, namespace and timeout flags",
			args:    []string{"exec", "-n", "default", "pod/web", "-c", "side", "--timeout", "7", "--", "ls", "-l"},
			result:  &podv1.ExecSyncResponse{},
			wantReq: &podv1.ExecSyncRequest{Namespace: "default", Name: "web", Container: "side", Command: []string{"ls", "-l"}, TimeoutSeconds: 7},
		},
		{
			desc:     "a failing command ends splitctl with its exit code, as kubectl exec",
			args:     []string{"exec", "web", "--", "false"},
			result:   &podv1.ExecSyncResponse{Stderr: []byte("nope\n"), ExitCode: 3},
			wantReq:  &podv1.ExecSyncRequest{Namespace: "default", Name: "web", Command: []string{"false"}},
			wantCode: 3,
			wantErr:  "nope\ncommand terminated with exit code 3",
		},
		{
			desc:     "no command",
			args:     []string{"exec", "web"},
			wantCode: 1,
			wantErr:  "error: you must specify at least one command for the container",
		},
		{
			desc:     "unknown pod",
			args:     []string{"exec", "nope", "--", "true"},
			wantReq:  &podv1.ExecSyncRequest{Namespace: "default", Name: "nope", Command: []string{"true"}},
			wantCode: 1,
			wantErr:  `Error from server (NotFound): pods "nope" not found`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.SetPod(samplePod("default", "web"))
			h.fake.ExecResult = tc.result
			r := h.run("", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			if r.stdout != tc.wantOut {
				t.Errorf("stdout %q, want %q", r.stdout, tc.wantOut)
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
			got := podfake.LastRequest[*podv1.ExecSyncRequest](h.fake)
			if (tc.wantReq == nil) != (got == nil) || (got != nil && !proto.Equal(got, tc.wantReq)) {
				t.Errorf("ExecSyncRequest = %v, want %v", got, tc.wantReq)
			}
		})
	}
}
