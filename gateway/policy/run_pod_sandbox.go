package policy

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CheckRunPodSandbox refuses privileged sandboxes and host namespaces the
// configuration does not allow.
func (p *Policy) CheckRunPodSandbox(req *runtimeapi.RunPodSandboxRequest) error {
	cfg := req.GetConfig()
	sc := cfg.GetLinux().GetSecurityContext()
	rule := p.namespaceRule(sc.GetNamespaceOptions())
	if sc.GetPrivileged() && !p.cfg.AllowPrivileged {
		rule = "privileged pods are not allowed"
	}
	if rule == "" {
		return nil
	}
	// The object is named only for a refusal: every pod passes here.
	return &DeniedError{Rule: rule, Object: fmt.Sprintf("pod %q", podName(cfg.GetMetadata()))}
}
