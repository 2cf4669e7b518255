package server

import (
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// validate is the validation step of the unary chain (unaryChain): it
// refuses requests missing a field the runtime cannot do without, before the
// backend or the policy sees them. Runtimes check these too, but each words
// it differently (containerd answers an empty container ID with NotFound);
// one InvalidArgument naming the field is clearer to callers.
func validate(fullMethod string, req any) error {
	if field := missingField(req); field != "" {
		return &missingFieldError{method: operation(fullMethod), field: field}
	}
	return nil
}

// missingFieldError wraps errdefs.ErrInvalidArgument with a message naming
// the method and the field, e.g. "StartContainer: container_id is required".
type missingFieldError struct{ method, field string }

func (e *missingFieldError) Error() string {
	return fmt.Sprintf("%s: %s is required", e.method, e.field)
}

func (e *missingFieldError) Unwrap() error { return errdefs.ErrInvalidArgument }

// missingField returns the proto path of the first required field req lacks,
// or "" when it has them all. Requests not listed have no required fields.
func missingField(req any) string {
	switch r := req.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		switch {
		case r.GetConfig() == nil:
			return "config"
		case r.GetConfig().GetMetadata() == nil:
			return "config.metadata"
		}
	case *runtimeapi.CreateContainerRequest:
		switch {
		case r.GetPodSandboxId() == "":
			return "pod_sandbox_id"
		case r.GetConfig() == nil:
			return "config"
		case r.GetConfig().GetMetadata() == nil:
			return "config.metadata"
		}

	case *runtimeapi.StopPodSandboxRequest:
		return needID(r.GetPodSandboxId(), "pod_sandbox_id")
	case *runtimeapi.RemovePodSandboxRequest:
		return needID(r.GetPodSandboxId(), "pod_sandbox_id")
	case *runtimeapi.PodSandboxStatusRequest:
		return needID(r.GetPodSandboxId(), "pod_sandbox_id")
	case *runtimeapi.PodSandboxStatsRequest:
		return needID(r.GetPodSandboxId(), "pod_sandbox_id")
	case *runtimeapi.PortForwardRequest:
		return needID(r.GetPodSandboxId(), "pod_sandbox_id")
	case *runtimeapi.UpdatePodSandboxResourcesRequest:
		return needID(r.GetPodSandboxId(), "pod_sandbox_id")

	case *runtimeapi.StartContainerRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.StopContainerRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.RemoveContainerRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.ContainerStatusRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.ContainerStatsRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.UpdateContainerResourcesRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.ReopenContainerLogRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.ExecSyncRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.ExecRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.AttachRequest:
		return needID(r.GetContainerId(), "container_id")
	case *runtimeapi.CheckpointContainerRequest:
		return needID(r.GetContainerId(), "container_id")

	case *runtimeapi.PullImageRequest:
		return needImage(r.GetImage())
	case *runtimeapi.ImageStatusRequest:
		return needImage(r.GetImage())
	case *runtimeapi.RemoveImageRequest:
		return needImage(r.GetImage())
	}
	return ""
}

func needID(id, field string) string {
	if id == "" {
		return field
	}
	return ""
}

func needImage(spec *runtimeapi.ImageSpec) string {
	switch {
	case spec == nil:
		return "image"
	case spec.GetImage() == "":
		return "image.image"
	}
	return ""
}
