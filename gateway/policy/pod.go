package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Pod is what the policy looks at, in the pod's own terms. The CRI checks
// (CheckRunPodSandbox, CheckCreateContainer) and PolicyService's CheckPod
// both describe a pod this way, so one set of rules decides both.
type Pod struct {
	HostNetwork, HostPID, HostIPC bool
	Containers                    []Container
	HostPaths                     []HostPath
}

// Container is one container's part of a Pod.
type Container struct {
	Privileged bool
	// AddCapabilities as written (NET_ADMIN, CAP_SYS_TIME, ALL).
	AddCapabilities []string
}

// HostPath is a path on the node a container mounts; Index is the
// volume's (PolicyService) or the mount's (CRI) position.
type HostPath struct {
	Index int
	Path  string
}

// Kind is what a Violation is about.
type Kind int

const (
	KindPrivileged Kind = iota + 1
	KindHostNetwork
	KindHostPID
	KindHostIPC
	KindHostPath
	KindCapability
)

// Violation is one rule a Pod breaks. Index is the container's position
// in Pod.Containers (KindPrivileged, KindCapability) or HostPath.Index
// (KindHostPath); Value the capability or path refused.
type Violation struct {
	Kind  Kind
	Rule  string
	Index int
	Value string
}

// Violations returns every rule pod breaks, pod-level ones first.
func (p *Policy) Violations(pod Pod) []Violation {
	var out []Violation
	for _, ns := range []struct {
		set, allowed bool
		kind         Kind
		rule         string
	}{
		{pod.HostNetwork, p.cfg.AllowHostNetwork, KindHostNetwork, "host network is not allowed"},
		{pod.HostPID, p.cfg.AllowHostPID, KindHostPID, "host PID namespace is not allowed"},
		{pod.HostIPC, p.cfg.AllowHostIPC, KindHostIPC, "host IPC namespace is not allowed"},
	} {
		if ns.set && !ns.allowed {
			out = append(out, Violation{Kind: ns.kind, Rule: ns.rule})
		}
	}
	for i, c := range pod.Containers {
		if c.Privileged && !p.cfg.AllowPrivileged {
			out = append(out, Violation{Kind: KindPrivileged, Rule: "privileged containers are not allowed", Index: i})
			continue
		}
		if c.Privileged {
			// It has every capability already.
			continue
		}
		for _, capability := range c.AddCapabilities {
			if name := capabilityName(capability); !p.capabilityAllowed(name) {
				out = append(out, Violation{Kind: KindCapability, Index: i, Value: capability,
					Rule: fmt.Sprintf("capability %s is not allowed", name)})
			}
		}
	}
	for _, hp := range pod.HostPaths {
		if !p.hostPathAllowed(hp.Path) {
			out = append(out, Violation{Kind: KindHostPath, Index: hp.Index, Value: hp.Path,
				Rule: fmt.Sprintf("host path %q is not under an allowed prefix", hp.Path)})
		}
	}
	return out
}

// BaselineCapabilities are the capabilities the Pod Security Standards'
// baseline level lets a container add (the container runtimes' default
// set); DefaultConfig allows these.
var BaselineCapabilities = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// AnyCapability in AllowedCapabilities allows every capability, ALL too.
const AnyCapability = "*"

// capabilityName is a capability as the allow list spells it: upper case,
// without CAP_ (the kubelet passes either spelling to the runtime).
func capabilityName(c string) string {
	return strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_")
}

// capabilityAllowed: ALL only through AnyCapability, as it stands for
// every capability the list does not name.
func (p *Policy) capabilityAllowed(name string) bool {
	if slices.Contains(p.capabilities, AnyCapability) {
		return true
	}
	return name != "ALL" && slices.Contains(p.capabilities, name)
}
