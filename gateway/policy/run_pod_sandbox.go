package policy

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CheckRunPodSandbox refuses privileged sandboxes and host namespaces the
// configuration does not allow.
func (p *Policy) CheckRunPodSandbox(req *runtimeapi.RunPodSandboxRequest) error {
	cfg := req.GetConfig()
	object := fmt.Sprintf("pod %q", podName(cfg.GetMetadata()))
	sc := cfg.GetLinux().GetSecurityContext()
	if sc.GetPrivileged() && !p.cfg.AllowPrivileged {
		return &DeniedError{Rule: "privileged pods are not allowed", Object: object}
	}
	return p.checkNamespaces(sc.GetNamespaceOptions(), object)
}
