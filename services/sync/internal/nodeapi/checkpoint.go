package nodeapi

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// checkpoint has the runtime checkpoint a running container to a tar
// archive under CheckpointDir and answers {"items": ["<path>"]}: the
// kubelet's checkpoint handler and CheckpointContainer (ContainerCheckpoint,
// beta). As the kubelet's: an unknown pod or a container not in its spec is
// 404, and so is a timeout query parameter that is not an integer (the last
// one counts); a container that does not run, a negative timeout or a
// runtime error (Unimplemented included) is 500 "checkpointing of
// <ns>/<pod>/<container> failed (<cause>)". The timeout, in seconds, goes
// to the runtime in the request; the CRI client raises one shorter than
// the runtime request timeout to it (internal/criclient).
func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	ns, name, containerName := r.PathValue("podNamespace"), r.PathValue("podID"), r.PathValue("containerName")
	pod := s.opts.Pods.GetPodByFullName(ns, name)
	if pod == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	if getContainerSpec(pod, containerName) == nil {
		http.Error(w, fmt.Sprintf("container %v does not exist", containerName), http.StatusNotFound)
		return
	}
	req := &runtimeapi.CheckpointContainerRequest{}
	if timeouts := r.URL.Query()["timeout"]; len(timeouts) > 0 {
		timeout, err := strconv.ParseInt(timeouts[len(timeouts)-1], 10, 64)
		if err != nil {
			http.Error(w, "cannot parse value of timeout parameter", http.StatusNotFound)
			return
		}
		req.Timeout = timeout
	}
	// The kubelet's podFullName, <name>_<namespace>.
	podFullName := pod.Name + "_" + pod.Namespace
	req.Location = filepath.Join(s.opts.CheckpointDir,
		fmt.Sprintf("checkpoint-%s-%s-%s.tar", podFullName, containerName, s.opts.Now().Format(time.RFC3339)))
	if err := s.checkpointContainer(r, pod.UID, containerName, req); err != nil {
		http.Error(w, fmt.Sprintf("checkpointing of %v/%v/%v failed (%v)", ns, name, containerName, err), http.StatusInternalServerError)
		return
	}
	writeJSON(w, r, struct {
		Items []string `json:"items"`
	}{Items: []string{req.GetLocation()}})
}

// checkpointContainer finds the pod's running container and asks the
// runtime to checkpoint it (the kubelet's Kubelet.CheckpointContainer and
// the checks of its remote runtime's).
func (s *Server) checkpointContainer(r *http.Request, uid types.UID, containerName string, req *runtimeapi.CheckpointContainerRequest) error {
	if req.GetTimeout() < 0 {
		return errors.New("CheckpointContainer requires the timeout value to be > 0")
	}
	id, err := s.runningContainerID(r.Context(), uid, containerName)
	if err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("container %v not found", containerName)
	}
	req.ContainerId = id
	if _, err := s.opts.Runtime.CheckpointContainer(r.Context(), req); err != nil {
		logctx.From(r.Context()).Info("CheckpointContainer failed", zap.String("containerID", id), zap.Error(err))
		return err
	}
	return nil
}
