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
	rule := p.createContainerRule(cfg)
	if rule == "" {
		return nil
	}
	// The object is named only for a refusal: every container passes here.
	return &DeniedError{Rule: rule, Object: fmt.Sprintf("container %q in pod %q",
		cfg.GetMetadata().GetName(), podName(req.GetSandboxConfig().GetMetadata()))}
}

// createContainerRule is the first rule cfg breaks, or "".
func (p *Policy) createContainerRule(cfg *runtimeapi.ContainerConfig) string {
	sc := cfg.GetLinux().GetSecurityContext()
	if sc.GetPrivileged() && !p.cfg.AllowPrivileged {
		return "privileged containers are not allowed"
	}
	if rule := p.namespaceRule(sc.GetNamespaceOptions()); rule != "" {
		return rule
	}
	for _, m := range cfg.GetMounts() {
		if m.GetHostPath() != "" && !p.hostPathAllowed(m.GetHostPath()) {
			return fmt.Sprintf("host path %q is not under an allowed prefix", m.GetHostPath())
		}
	}
	return ""
}
