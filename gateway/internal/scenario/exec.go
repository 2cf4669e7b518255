package scenario

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// execSync: commands run in the container and their output and exit codes
// come back; a non-zero exit is a result, not an RPC error.
func (r *run) execSync(t *testing.T) {
	tests := []struct {
		desc       string
		cmd        []string
		wantStdout string
		wantExit   int32
	}{
		{desc: "echo prints", cmd: []string{"echo", "exec-ok"}, wantStdout: "exec-ok\n", wantExit: 0},
		{desc: "shell exit code", cmd: []string{"sh", "-c", "exit 3"}, wantStdout: "", wantExit: 3},
	}
	for _, tc := range tests {
		resp, err := r.env.Runtime.ExecSync(r.ctx(t), &runtimeapi.ExecSyncRequest{
			ContainerId: r.containerID,
			Cmd:         tc.cmd,
			Timeout:     10,
		})
		if err != nil {
			t.Errorf("%s: ExecSync(%q): %v", tc.desc, tc.cmd, err)
			continue
		}
		if got := string(resp.GetStdout()); got != tc.wantStdout {
			t.Errorf("%s: ExecSync(%q) stdout = %q, want %q", tc.desc, tc.cmd, got, tc.wantStdout)
		}
		if resp.GetExitCode() != tc.wantExit {
			t.Errorf("%s: ExecSync(%q) exit code = %d, want %d (stderr %q)", tc.desc, tc.cmd, resp.GetExitCode(), tc.wantExit, resp.GetStderr())
		}
	}
}
