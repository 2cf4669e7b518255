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
	pod := namespaces(sc.GetNamespaceOptions())
	rule := ""
	if v := p.Violations(pod); len(v) > 0 {
		rule = v[0].Rule
	}
	if sc.GetPrivileged() && !p.cfg.AllowPrivileged {
		rule = "privileged pods are not allowed"
	}
	if rule == "" {
		return nil
	}
	// The object is named only for a refusal: every pod passes here.
	return &DeniedError{Rule: rule, Object: fmt.Sprintf("pod %q", podName(cfg.GetMetadata()))}
}

// namespaces is a Pod with ns's host namespaces.
func namespaces(ns *runtimeapi.NamespaceOption) Pod {
	return Pod{
		HostNetwork: ns.GetNetwork() == runtimeapi.NamespaceMode_NODE,
		HostPID:     ns.GetPid() == runtimeapi.NamespaceMode_NODE,
		HostIPC:     ns.GetIpc() == runtimeapi.NamespaceMode_NODE,
	}
}
