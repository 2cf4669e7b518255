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

// createContainerRule is the first rule cfg breaks, or "": the container
// as a Pod of one, with its own namespaces and its mounts' host paths.
func (p *Policy) createContainerRule(cfg *runtimeapi.ContainerConfig) string {
	sc := cfg.GetLinux().GetSecurityContext()
	pod := namespaces(sc.GetNamespaceOptions())
	pod.Containers = []Container{{Privileged: sc.GetPrivileged(), AddCapabilities: sc.GetCapabilities().GetAddCapabilities()}}
	for i, m := range cfg.GetMounts() {
		if m.GetHostPath() != "" {
			pod.HostPaths = append(pod.HostPaths, HostPath{Index: i, Path: m.GetHostPath()})
		}
	}
	v := p.Violations(pod)
	if len(v) == 0 {
		return ""
	}
	// A container's own refusal reads before its pod's namespaces'.
	for _, x := range v {
		if x.Kind == KindPrivileged {
			return x.Rule
		}
	}
	return v[0].Rule
}
