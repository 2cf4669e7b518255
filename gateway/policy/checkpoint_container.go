package policy

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CheckCheckpointContainer refuses a checkpoint archive written outside the
// allowed host paths. The runtime writes it as root wherever the request
// says, with contents taken from the container's filesystem: unchecked, a
// caller the policy keeps from mounting the node's files could overwrite
// them this way. The kubelet asks for its checkpoints under its root
// directory (sync: <state-dir>/checkpoints), inside the default prefix.
func (p *Policy) CheckCheckpointContainer(req *runtimeapi.CheckpointContainerRequest) error {
	if p.hostPathAllowed(req.GetLocation()) {
		return nil
	}
	return &DeniedError{Rule: fmt.Sprintf("checkpoint location %q is outside the allowed host paths", req.GetLocation()),
		Object: fmt.Sprintf("container %q", req.GetContainerId())}
}
