package nodeapi

import (
	"fmt"
	"net/http"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// getRun runs a command in a container and answers with its output,
// stdout then stderr (not interleaved), as one response: the kubelet's
// legacy /run endpoint (getRun, RunInContainer). The command is the cmd
// query parameter split on spaces; the call has no timeout. A command that
// exits non-zero is a 500 naming its exit code and stderr, as the
// kubelet's remote runtime reports ExecSync's CodeExitError.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	params := getExecRequestParams(r)
	// For legacy reasons, run uses a different query parameter than exec.
	params.cmd = strings.Split(r.URL.Query().Get("cmd"), " ")
	_, id, ok := s.findContainer(w, r, params)
	if !ok {
		return
	}
	resp, err := s.opts.Runtime.ExecSync(r.Context(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: params.cmd})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if resp.GetExitCode() != 0 {
		http.Error(w, fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(params.cmd, " "), resp.GetExitCode(), resp.GetStderr()),
			http.StatusInternalServerError)
		return
	}
	out := append(resp.GetStdout(), resp.GetStderr()...)
	if len(out) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	// The kubelet's writeJSONResponse labels the raw output JSON.
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
