// Package policy decides which pods and containers the gateway lets through to
// the container runtime.
//
// The gateway is the only process that opens the runtime's socket, so it is the
// one place where a node can refuse workloads that would escape their sandbox.
// A Policy inspects RunPodSandbox and CreateContainer requests and refuses:
//
//   - privileged pods and containers, unless AllowPrivileged;
//   - the host's network namespace, unless AllowHostNetwork;
//   - the host's PID namespace, unless AllowHostPID;
//   - the host's IPC namespace, unless AllowHostIPC;
//   - host path mounts outside AllowedHostPathPrefixes (compared after
//     resolving "..", and the symbolic links of the part of the path that
//     exists, so "/var/log/../etc" and a link to /etc are seen as "/etc");
//   - capabilities a container adds that AllowedCapabilities does not list
//     (ALL only with "*").
//
// Defaults (DefaultConfig, and the gateway's flags): privileged, host PID and
// host IPC are denied, capabilities beyond the baseline set
// (BaselineCapabilities) too; host network is ALLOWED, because node agents commonly
// run with hostNetwork and pods on a node without CNI (the e2e suite) can only
// use the node network; host paths are allowed only under /var/lib/splitlet,
// where the sync service keeps pod directories (etc-hosts, termination logs,
// emptyDir volumes) the way the kubelet uses /var/lib/kubelet. An allowed
// prefix of "/" allows every host path. The zero Config denies everything.
//
// A refusal is an error wrapping errdefs.ErrPermissionDenied whose message names
// the rule and the object, e.g.
//
//	policy: privileged containers are not allowed (container "c1" in pod "ns/name")
//
// which the gateway's server turns into codes.PermissionDenied with that message.
//
// Usage:
//
//	p := policy.New(policy.DefaultConfig())
//	if err := p.Check(req); err != nil { return nil, err }
package policy

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/hostpath"
)

// DefaultHostPathPrefix is where the sync service keeps per-pod directories;
// allowed by DefaultConfig so pods with emptyDir volumes and /etc/hosts mounts run.
const DefaultHostPathPrefix = "/var/lib/splitlet"

// Config says what the policy allows. The zero value denies everything.
type Config struct {
	// AllowPrivileged lets pods and containers set privileged in their Linux
	// security context.
	AllowPrivileged bool
	// AllowHostNetwork lets pods use the node's network namespace.
	AllowHostNetwork bool
	// AllowHostPID lets pods and containers use the node's PID namespace.
	AllowHostPID bool
	// AllowHostIPC lets pods and containers use the node's IPC namespace.
	AllowHostIPC bool
	// AllowedHostPathPrefixes are the directories under which host paths may be
	// mounted into containers. "/" allows every path; empty allows none.
	AllowedHostPathPrefixes []string
	// AllowedCapabilities are the capabilities a container may add, as
	// named without CAP_; "*" allows every one, ALL included.
	AllowedCapabilities []string
}

// DefaultConfig is the gateway's default: see the package comment for why.
func DefaultConfig() Config {
	return Config{
		AllowHostNetwork:        true,
		AllowedHostPathPrefixes: []string{DefaultHostPathPrefix},
		AllowedCapabilities:     slices.Clone(BaselineCapabilities),
	}
}

// Policy checks CRI requests against a Config. It is safe for concurrent use.
type Policy struct {
	cfg          Config
	prefixes     []string // cleaned, absolute
	capabilities []string // capabilityName-d
}

// New returns a Policy for cfg. Relative prefixes are ignored: a CRI host path
// is absolute, so a relative prefix could never match anything meaningful.
func New(cfg Config) *Policy {
	p := &Policy{cfg: cfg}
	for _, prefix := range cfg.AllowedHostPathPrefixes {
		if !filepath.IsAbs(prefix) {
			continue
		}
		p.prefixes = append(p.prefixes, hostpath.Resolve(prefix))
	}
	for _, c := range cfg.AllowedCapabilities {
		p.capabilities = append(p.capabilities, capabilityName(c))
	}
	return p
}

// Config returns the configuration the policy was built from.
func (p *Policy) Config() Config { return p.cfg }

// Check inspects a CRI request and returns a DeniedError when the policy refuses
// it. Requests of other types are always allowed.
func (p *Policy) Check(req any) error {
	switch r := req.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		return p.CheckRunPodSandbox(r)
	case *runtimeapi.CreateContainerRequest:
		return p.CheckCreateContainer(r)
	case *runtimeapi.CheckpointContainerRequest:
		return p.CheckCheckpointContainer(r)
	}
	return nil
}

// DeniedError is a policy refusal. It wraps errdefs.ErrPermissionDenied.
type DeniedError struct {
	// Rule is what was refused, e.g. "privileged containers are not allowed".
	Rule string
	// Object names what asked for it, e.g. `container "c1" in pod "ns/name"`.
	Object string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("policy: %s (%s)", e.Rule, e.Object)
}

// Unwrap makes errors.Is(err, errdefs.ErrPermissionDenied) true, which is how
// the server's error conversion finds the gRPC code.
func (e *DeniedError) Unwrap() error { return errdefs.ErrPermissionDenied }

// hostPathAllowed reports whether path, once resolved, is one of the
// allowed prefixes or below one. Comparing whole path elements keeps
// "/var/lib/splitlet2" from matching the prefix "/var/lib/splitlet".
func (p *Policy) hostPathAllowed(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	real := hostpath.Resolve(path)
	for _, prefix := range p.prefixes {
		if hostpath.Within(real, prefix) {
			return true
		}
	}
	return false
}

// podName renders a sandbox's metadata as "namespace/name" for messages.
func podName(md *runtimeapi.PodSandboxMetadata) string {
	if md == nil {
		return "<no metadata>"
	}
	return md.GetNamespace() + "/" + md.GetName()
}
