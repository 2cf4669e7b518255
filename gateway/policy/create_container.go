package policy

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CheckCreateContainer refuses privileged containers, host namespaces and host
// path mounts the configuration does not allow. The container's own namespace
// options are checked as well as the sandbox's: a container may ask for the
// host PID namespace even when its pod did not.
func (p *Policy) CheckCreateContainer(req *runtimeapi.CreateContainerRequest) error {
	cfg := req.GetConfig()
	object := fmt.Sprintf("container %q in pod %q",
		cfg.GetMetadata().GetName(), podName(req.GetSandboxConfig().GetMetadata()))
	sc := cfg.GetLinux().GetSecurityContext()
	if sc.GetPrivileged() && !p.cfg.AllowPrivileged {
		return &DeniedError{Rule: "privileged containers are not allowed", Object: object}
	}
	if err := p.checkNamespaces(sc.GetNamespaceOptions(), object); err != nil {
		return err
	}
	for _, m := range cfg.GetMounts() {
		if m.GetHostPath() == "" {
			continue
		}
		if !p.hostPathAllowed(m.GetHostPath()) {
			return &DeniedError{
				Rule:   fmt.Sprintf("host path %q is not under an allowed prefix", m.GetHostPath()),
				Object: object,
			}
		}
	}
	return nil
}
