package kuberuntime

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// Defaults for SandboxOptions and ContainerOptions: the kubelet's.
const (
	// DefaultPodLogsRoot is the kubelet's --pod-logs-dir default.
	DefaultPodLogsRoot = "/var/log/pods"
	// DefaultResolvConf is the kubelet's --resolv-conf default.
	DefaultResolvConf = "/etc/resolv.conf"
	// DefaultPodsDir is where the kubelet keeps per-pod state
	// (<root-dir>/pods, root-dir /var/lib/kubelet).
	DefaultPodsDir = "/var/lib/kubelet/pods"
	// DefaultSeccompProfileRoot is the kubelet's <root-dir>/seccomp.
	DefaultSeccompProfileRoot = "/var/lib/kubelet/seccomp"
)

// The kubelet's DNS limits (validation.MaxDNSNameservers,
// MaxDNSSearchPaths, MaxDNSSearchListChars): glibc reads at most three
// nameservers, and the search list has a size cap.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	hostnameMaxLen        = 63
	fqdnMaxLen            = 64
)

// defaultDNSOptions are the resolver options of cluster-DNS pods, as in the
// kubelet's dns.go.
var defaultDNSOptions = []string{"ndots:5"}

// CgroupParentFunc names the cgroup a pod's sandbox and containers go under.
type CgroupParentFunc func(pod *v1.Pod, class v1.PodQOSClass) string

// SandboxOptions carries the node configuration generatePodSandboxConfig
// needs. The zero value is the kubelet's defaults with no cluster DNS.
type SandboxOptions struct {
	// ClusterDNS are the cluster DNS server IPs (kubelet --cluster-dns).
	// Without them a ClusterFirst pod falls back to Default, as in the
	// kubelet.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (--cluster-domain), e.g.
	// "cluster.local"; empty adds no cluster search domains.
	ClusterDomain string
	// ResolvConf is the host resolv.conf that Default pods inherit; empty
	// means DefaultResolvConf.
	ResolvConf string
	// NoResolvConf is the kubelet's --resolv-conf="": pods inheriting the
	// host's DNS get a localhost nameserver and search "." instead.
	NoResolvConf bool
	// NodeIPs pick the localhost nameserver family under NoResolvConf.
	NodeIPs []string
	// ReadFile reads ResolvConf; nil means os.ReadFile. Tests inject one.
	ReadFile func(path string) ([]byte, error)
	// resolv caches the parsed ResolvConf when ReadFile is nil (NewManager
	// sets it; nil reads the file every time).
	resolv *resolvConfCache
	// PodLogsRoot holds the pods' log directories; empty means
	// DefaultPodLogsRoot.
	PodLogsRoot string
	// CgroupParent names a pod's cgroup; nil means CgroupfsPodCgroupParent.
	CgroupParent CgroupParentFunc
	// CFS is the kubelet's cpuCFSQuota and cpuCFSQuotaPeriod, as for
	// containers (ContainerOptions.CFS).
	CFS CPUCFS
}

// CgroupfsPodCgroupParent names a pod's cgroup the way the kubelet does with
// the cgroupfs driver and the default cgroup root (podContainerManagerImpl.
// GetPodContainerName): /kubepods/pod<uid> for Guaranteed pods, which sit
// directly under the kubepods cgroup, and /kubepods/burstable/pod<uid> or
// /kubepods/besteffort/pod<uid> for the other classes. With pod cgroups on
// (ManagerOptions.PodCgroups) sync makes the pod's before the sandbox;
// otherwise the runtime creates the missing levels of a cgroup parent when
// it starts the sandbox.
func CgroupfsPodCgroupParent(pod *v1.Pod, class v1.PodQOSClass) string {
	leaf := "pod" + string(pod.UID)
	switch class {
	case v1.PodQOSGuaranteed:
		return "/kubepods/" + leaf
	case v1.PodQOSBurstable:
		return "/kubepods/burstable/" + leaf
	default:
		return "/kubepods/besteffort/" + leaf
	}
}

// BuildPodLogsDirectory returns the pod's log directory,
// <root>/<namespace>_<name>_<uid>. Matches the kubelet's
// BuildPodLogsDirectory.
func BuildPodLogsDirectory(root, namespace, name, uid string) string {
	return filepath.Join(root, strings.Join([]string{namespace, name, uid}, "_"))
}

// generatePodSandboxConfig builds the RunPodSandbox config for a pod. It
// matches the kubelet's generatePodSandboxConfig (with
// generatePodSandboxLinuxConfig and applySandboxResources):
//   - metadata (name, namespace, uid, attempt), labels from newPodLabels and
//     annotations from newPodAnnotations;
//   - DNS from the pod's dnsPolicy and dnsConfig (podDNSConfig);
//   - a hostname for pod-network pods only: a host-network pod shares the
//     node's UTS namespace, so the runtime must get none;
//   - the log directory, port mappings of every container port, and the
//     Linux config (cgroup parent, security context, sysctls, resources).
//
// It creates nothing on disk; the caller creates the log directory before
// RunPodSandbox, as the kubelet's createPodSandbox does.
func generatePodSandboxConfig(ctx context.Context, pod *v1.Pod, attempt uint32, opts SandboxOptions) (*runtimeapi.PodSandboxConfig, error) {
	log := loggerFrom(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name))
	config := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:      newPodLabels(pod),
		Annotations: newPodAnnotations(pod),
	}

	dns, err := podDNSConfig(ctx, pod, opts)
	if err != nil {
		return nil, err
	}
	config.DnsConfig = dns

	if !container.IsHostNetworkPod(pod) {
		hostname, domain, err := generatePodHostNameAndDomain(ctx, pod, opts.ClusterDomain)
		if err != nil {
			return nil, err
		}
		if hostname, err = nodenameForKernel(hostname, domain, pod.Spec.SetHostnameAsFQDN); err != nil {
			return nil, err
		}
		config.Hostname = hostname
	}

	root := opts.PodLogsRoot
	if root == "" {
		root = DefaultPodLogsRoot
	}
	config.LogDirectory = BuildPodLogsDirectory(root, pod.Namespace, pod.Name, string(pod.UID))

	for i := range pod.Spec.Containers {
		config.PortMappings = append(config.PortMappings, makePortMappings(log, &pod.Spec.Containers[i])...)
	}

	linux, err := generatePodSandboxLinuxConfig(pod, opts)
	if err != nil {
		return nil, err
	}
	config.Linux = linux
	return config, nil
}

// generatePodSandboxLinuxConfig matches the kubelet's function of that name
// plus applySandboxResources. The sandbox gets the runtime's default seccomp
// profile whatever the pod asks for (kubernetes#84623: the pause process
// needs nothing more, and it lets pods use tight profiles), and is
// privileged when any container is.
//
// The kubelet sets namespace options, users and groups only when
// pod.Spec.SecurityContext is non-nil; defaulting always makes it so, and
// sync sets namespace options regardless, since podSandboxChanged compares
// the sandbox's network mode with the pod's.
func generatePodSandboxLinuxConfig(pod *v1.Pod, opts SandboxOptions) (*runtimeapi.LinuxPodSandboxConfig, error) {
	cgroupParent := opts.CgroupParent
	if cgroupParent == nil {
		cgroupParent = CgroupfsPodCgroupParent
	}
	lc := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: cgroupParent(pod, qos.GetPodQOS(pod)),
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			Privileged:       hasPrivilegedContainer(pod),
			Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			NamespaceOptions: namespacesForPod(pod),
		},
		Sysctls: map[string]string{},
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		// Slash-separated names (net/ipv4/ip_local_port_range) go to the
		// runtime dot-separated, which runc requires to tell the sysctl's
		// namespace: the kubelet's ConvertPodSysctlsVariableToDotsSeparator.
		for _, s := range sc.Sysctls {
			lc.Sysctls[utilsysctl.NormalizeName(s.Name)] = s.Value
		}
		if sc.RunAsUser != nil {
			lc.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
		}
		if sc.RunAsGroup != nil {
			lc.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
		}
		groups, policy, err := supplementalGroups(sc)
		if err != nil {
			return nil, err
		}
		lc.SecurityContext.SupplementalGroups = groups
		lc.SecurityContext.SupplementalGroupsPolicy = policy
		if o := sc.SELinuxOptions; o != nil {
			lc.SecurityContext.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
		}
	}
	lc.Resources = sandboxResources(pod, opts.CFS.period())
	lc.Overhead = overheadResources(pod, opts.CFS.period())
	return lc, nil
}

// supplementalGroups returns the pod's fsGroup followed by its
// supplementalGroups, and the groups policy, as the kubelet's
// generatePodSandboxLinuxConfig and determineEffectiveSecurityContext build
// them. Extra groups from persistent volumes' annotations do not apply:
// splitlet mounts no persistent volumes.
func supplementalGroups(sc *v1.PodSecurityContext) ([]int64, runtimeapi.SupplementalGroupsPolicy, error) {
	var groups []int64
	if sc.FSGroup != nil {
		groups = append(groups, *sc.FSGroup)
	}
	groups = append(groups, sc.SupplementalGroups...)
	var policy runtimeapi.SupplementalGroupsPolicy
	if sc.SupplementalGroupsPolicy != nil {
		v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*sc.SupplementalGroupsPolicy)]
		if !ok {
			return nil, 0, fmt.Errorf("%w: spec.securityContext.supplementalGroupsPolicy: unsupported value %q",
				errdefs.ErrInvalidArgument, *sc.SupplementalGroupsPolicy)
		}
		policy = runtimeapi.SupplementalGroupsPolicy(v)
	}
	return groups, policy, nil
}

// namespacesForPod returns the pod's namespace modes. Matches the kubelet's
// NamespacesForPod without user namespaces (hostUsers: false is not
// supported yet): network and IPC are NODE for hostNetwork / hostIPC and POD
// otherwise; PID is NODE for hostPID, POD when shareProcessNamespace is set,
// and CONTAINER otherwise.
func namespacesForPod(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Ipc:     runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// hasPrivilegedContainer reports whether any init, regular or ephemeral
// container is privileged. Matches the kubelet's
// kubecontainer.HasPrivilegedContainer.
func hasPrivilegedContainer(pod *v1.Pod) bool {
	privileged := func(sc *v1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for i := range pod.Spec.InitContainers {
		if privileged(pod.Spec.InitContainers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if privileged(pod.Spec.Containers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

// sandboxResources is the pod's aggregate cpu request and cpu and memory
// limits as Linux resources, without overhead. Matches the kubelet's
// calculateSandboxResources with resourcehelper.PodRequests/PodLimits
// (PodLevelResources on): pod-level values win; otherwise the larger of the
// regular containers plus sidecars and the biggest init container step
// (which runs beside the sidecars started before it).
func sandboxResources(pod *v1.Pod, cfsPeriod int64) *runtimeapi.LinuxContainerResources {
	req := aggregatePodResources(pod, func(r v1.ResourceRequirements) v1.ResourceList { return r.Requests })
	lim := aggregatePodResources(pod, func(r v1.ResourceRequirements) v1.ResourceList { return r.Limits })
	var cpuRequest *resource.Quantity
	if q, ok := req[v1.ResourceCPU]; ok {
		cpuRequest = &q
	}
	return calculateLinuxResources(cpuRequest, lim.Cpu(), lim.Memory(), cfsPeriod)
}

// overheadResources is the pod overhead (runtime class overhead) as Linux
// resources, request equal to limit; empty when the pod has none. Matches the
// kubelet's convertOverheadToLinuxResources.
func overheadResources(pod *v1.Pod, cfsPeriod int64) *runtimeapi.LinuxContainerResources {
	if pod.Spec.Overhead == nil {
		return &runtimeapi.LinuxContainerResources{}
	}
	cpu := pod.Spec.Overhead.Cpu()
	return calculateLinuxResources(cpu, cpu, pod.Spec.Overhead.Memory(), cfsPeriod)
}

// aggregatePodResources sums one side (requests or limits) of the pod's
// containers the way resourcehelper.PodRequests / PodLimits do, without
// overhead.
func aggregatePodResources(pod *v1.Pod, side func(v1.ResourceRequirements) v1.ResourceList) v1.ResourceList {
	total := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		addResources(total, side(pod.Spec.Containers[i].Resources))
	}
	sidecars := v1.ResourceList{}
	initMax := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		step := v1.ResourceList{}
		if container.IsRestartableInitContainer(c) {
			addResources(total, side(c.Resources))
			addResources(sidecars, side(c.Resources))
			addResources(step, sidecars)
		} else {
			addResources(step, side(c.Resources))
			addResources(step, sidecars)
		}
		maxResources(initMax, step)
	}
	maxResources(total, initMax)
	if pod.Spec.Resources != nil {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := side(*pod.Spec.Resources)[name]; ok {
				total[name] = q.DeepCopy()
			}
		}
	}
	return total
}

func addResources(dst, src v1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func maxResources(dst, src v1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// makePortMappings returns the container's ports as CRI port mappings. Every
// port is passed on, with or without a hostPort, as the kubelet's
// MakePortMappings does (the runtime maps only those with one); a port whose
// name (or, unnamed, its family/protocol/hostIP/ports) repeats is dropped.
func makePortMappings(log *zap.Logger, c *v1.Container) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	seen := map[string]struct{}{}
	for _, p := range c.Ports {
		name := p.Name
		if name == "" {
			family := "any"
			if p.HostIP != "" {
				if ip := net.ParseIP(p.HostIP); ip != nil && ip.To4() == nil {
					family = "v6"
				} else {
					family = "v4"
				}
			}
			name = fmt.Sprintf("%s-%s-%s:%d:%d", family, p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
		}
		if _, dup := seen[name]; dup {
			log.Info("port name defined more than once, ignoring the repeat", zap.String("container", c.Name), zap.String("port", name))
			continue
		}
		seen[name] = struct{}{}
		out = append(out, &runtimeapi.PortMapping{
			Protocol:      toRuntimeProtocol(log, p.Protocol),
			ContainerPort: p.ContainerPort,
			HostPort:      p.HostPort,
			HostIp:        p.HostIP,
		})
	}
	return out
}

// toRuntimeProtocol matches the kubelet's toRuntimeProtocol: an unknown
// protocol is TCP.
func toRuntimeProtocol(log *zap.Logger, p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolTCP:
		return runtimeapi.Protocol_TCP
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	if p != "" {
		log.Warn("unknown protocol, defaulting to TCP", zap.String("protocol", string(p)))
	}
	return runtimeapi.Protocol_TCP
}

// generatePodHostNameAndDomain returns the pod's hostname and domain.
// With spec.hostnameOverride (HostnameOverride, on by default in v1.36) the
// hostname is the override, which must be a DNS subdomain, and there is no
// domain, so neither setHostnameAsFQDN nor /etc/hosts add one. Otherwise
// the hostname is spec.hostname, else the pod's name, and with a subdomain
// the domain is <subdomain>.<namespace>.svc.<clusterDomain>. Either way the
// hostname is cut to 63 characters without a trailing '-' or '.'. Matches
// the kubelet's GeneratePodHostNameAndDomain and
// truncatePodHostnameIfNeeded.
func generatePodHostNameAndDomain(ctx context.Context, pod *v1.Pod, clusterDomain string) (string, string, error) {
	if pod.Spec.HostnameOverride != nil {
		override := *pod.Spec.HostnameOverride
		if msgs := validation.IsDNS1123Subdomain(override); len(msgs) != 0 {
			return "", "", fmt.Errorf("%w: spec.hostnameOverride %q is not a valid DNS subdomain: %s",
				errdefs.ErrInvalidArgument, override, strings.Join(msgs, ";"))
		}
		hostname, err := truncatePodHostnameIfNeeded(ctx, pod, override)
		return hostname, "", err
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("%w: spec.hostname %q is not a valid DNS label: %s",
				errdefs.ErrInvalidArgument, pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	hostname, err := truncatePodHostnameIfNeeded(ctx, pod, hostname)
	if err != nil {
		return "", "", err
	}
	domain := ""
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("%w: spec.subdomain %q is not a valid DNS label: %s",
				errdefs.ErrInvalidArgument, pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// truncatePodHostnameIfNeeded cuts hostname to the 63 characters the kernel
// takes, without a trailing '-' or '.'. Matches the kubelet's
// truncatePodHostnameIfNeeded.
func truncatePodHostnameIfNeeded(ctx context.Context, pod *v1.Pod, hostname string) (string, error) {
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	loggerFrom(ctx).Warn("pod hostname too long, truncated",
		zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("hostname", truncated))
	if truncated == "" {
		return "", fmt.Errorf("%w: hostname for pod %q was invalid: %q", errdefs.ErrInvalidArgument, pod.Name, hostname)
	}
	return truncated, nil
}

// nodenameForKernel returns the name the kernel gets: the FQDN when
// setHostnameAsFQDN is set and there is a domain (at most 64 characters),
// else the hostname. Matches the kubelet's util.GetNodenameForKernel.
func nodenameForKernel(hostname, domain string, setHostnameAsFQDN *bool) (string, error) {
	if domain == "" || setHostnameAsFQDN == nil || !*setHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > fqdnMaxLen {
		return "", fmt.Errorf("%w: FQDN %s is too long (%d characters is the max, %d characters requested)",
			errdefs.ErrInvalidArgument, fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}

// podDNSType is the kubelet's podDNSType.
type podDNSType int

const (
	podDNSCluster podDNSType = iota
	podDNSHost
	podDNSNone
)

// getPodDNSType matches the kubelet's: ClusterFirst on the host network
// means Default; an unknown policy means ClusterFirst.
func getPodDNSType(pod *v1.Pod) (podDNSType, error) {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return podDNSNone, nil
	case v1.DNSClusterFirstWithHostNet:
		return podDNSCluster, nil
	case v1.DNSClusterFirst, "":
		if !pod.Spec.HostNetwork {
			return podDNSCluster, nil
		}
		return podDNSHost, nil
	case v1.DNSDefault:
		return podDNSHost, nil
	}
	return podDNSCluster, fmt.Errorf("%w: invalid dnsPolicy %q", errdefs.ErrInvalidArgument, pod.Spec.DNSPolicy)
}

// podDNSConfig returns the pod's resolver configuration. Matches the
// kubelet's dns.Configurer.GetPodDNS:
//   - the host's resolv.conf is the base;
//   - None starts from nothing;
//   - ClusterFirst (and ClusterFirstWithHostNet) uses only the cluster DNS
//     servers, searches <ns>.svc.<domain>, svc.<domain>, <domain> then the
//     host's, and ndots:5; with no cluster DNS configured it falls back to
//     Default;
//   - Default keeps the host's settings (localhost and "." under
//     NoResolvConf);
//   - spec.dnsConfig is then merged in, and the result cut to the resolver's
//     limits.
func podDNSConfig(ctx context.Context, pod *v1.Pod, opts SandboxOptions) (*runtimeapi.DNSConfig, error) {
	log := loggerFrom(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name))
	dns, err := hostDNSConfig(opts)
	if err != nil {
		return nil, err
	}
	dnsType, err := getPodDNSType(pod)
	if err != nil {
		log.Error("invalid DNS policy, using ClusterFirst", zap.Error(err))
		dnsType = podDNSCluster
	}
	switch dnsType {
	case podDNSNone:
		dns = &runtimeapi.DNSConfig{}
	case podDNSCluster:
		if len(opts.ClusterDNS) > 0 {
			dns.Servers = append([]string(nil), opts.ClusterDNS...)
			dns.Searches = clusterFirstSearches(dns.Searches, pod.Namespace, opts.ClusterDomain)
			dns.Options = append([]string(nil), defaultDNSOptions...)
			break
		}
		// The kubelet records a MissingClusterDNS event per pod; sync
		// warns once at startup (daemon.Run) and notes it here only at
		// debug, so a burst of pods is not a burst of warnings.
		log.Debug("no cluster DNS configured, pod with ClusterFirst DNS policy falls back to Default")
		fallthrough
	case podDNSHost:
		if opts.NoResolvConf {
			for _, ip := range opts.NodeIPs {
				if parsed := net.ParseIP(ip); parsed != nil && parsed.To4() == nil {
					dns.Servers = append(dns.Servers, "::1")
				} else {
					dns.Servers = append(dns.Servers, "127.0.0.1")
				}
			}
			if len(dns.Servers) == 0 {
				dns.Servers = []string{"127.0.0.1"}
			}
			dns.Searches = []string{"."}
		}
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		dns.Servers = omitDuplicates(append(dns.Servers, pc.Nameservers...))
		dns.Searches = omitDuplicates(append(dns.Searches, pc.Searches...))
		dns.Options = mergeDNSOptions(dns.Options, pc.Options)
	}
	return dnsConfigFitsLimits(log, dns), nil
}

// hostDNSConfig reads the host's resolv.conf, or returns an empty config
// under NoResolvConf. Matches the kubelet's getHostDNSConfig.
func hostDNSConfig(opts SandboxOptions) (*runtimeapi.DNSConfig, error) {
	if opts.NoResolvConf {
		return &runtimeapi.DNSConfig{}, nil
	}
	path := opts.ResolvConf
	if path == "" {
		path = DefaultResolvConf
	}
	read := opts.ReadFile
	if read == nil {
		if opts.resolv != nil {
			return opts.resolv.get(path)
		}
		read = os.ReadFile
	}
	data, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("read host resolv.conf %s: %w", path, err)
	}
	return parseResolvConf(string(data)), nil
}

// parseResolvConf extracts nameservers, search domains and options. Matches
// the kubelet's parseResolvConf: comments start with '#' or ';', the last
// search line wins, "." and trailing dots are dropped from search domains,
// and a repeated option replaces the earlier one.
func parseResolvConf(data string) *runtimeapi.DNSConfig {
	dns := &runtimeapi.DNSConfig{}
	for _, line := range strings.Split(data, "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) >= 2 {
				dns.Servers = append(dns.Servers, fields[1])
			}
		case "search":
			dns.Searches = []string{}
			for _, s := range fields[1:] {
				if s != "." {
					dns.Searches = append(dns.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			dns.Options = mergeOptionStrings(dns.Options, fields[1:])
		}
	}
	return dns
}

// clusterFirstSearches puts the cluster's search domains before the host's.
// Matches the kubelet's generateSearchesForDNSClusterFirst.
func clusterFirstSearches(hostSearch []string, namespace, clusterDomain string) []string {
	if clusterDomain == "" {
		return hostSearch
	}
	search := []string{namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
	return omitDuplicates(append(search, hostSearch...))
}

func omitDuplicates(in []string) []string {
	seen := make(map[string]struct{}, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		if _, ok := seen[s]; ok {
			continue
		}
		seen[s] = struct{}{}
		out = append(out, s)
	}
	return out
}

// mergeOptionStrings adds "name[:value]" options, a later one replacing an
// earlier one of the same name in its place.
func mergeOptionStrings(existing, add []string) []string {
	out := append([]string(nil), existing...)
	for _, op := range add {
		name, _, _ := strings.Cut(op, ":")
		replaced := false
		for i, cur := range out {
			if curName, _, _ := strings.Cut(cur, ":"); curName == name {
				out[i] = op
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, op)
		}
	}
	return out
}

// mergeDNSOptions merges spec.dnsConfig.options over the base options.
// Matches the kubelet's mergeDNSOptions, except that the order is stable
// (base options first, in place) where the kubelet's follows map iteration.
func mergeDNSOptions(existing []string, add []v1.PodDNSConfigOption) []string {
	ops := make([]string, 0, len(add))
	for _, o := range add {
		op := o.Name
		if o.Value != nil && *o.Value != "" {
			op += ":" + *o.Value
		}
		ops = append(ops, op)
	}
	return mergeOptionStrings(existing, ops)
}

// dnsConfigFitsLimits keeps at most three nameservers and cuts the search
// list to the resolver's limits. Matches the kubelet's
// formDNSConfigFitsLimits.
func dnsConfigFitsLimits(log *zap.Logger, dns *runtimeapi.DNSConfig) *runtimeapi.DNSConfig {
	if len(dns.Servers) > maxDNSNameservers {
		log.Warn("too many nameservers, keeping the first ones", zap.Strings("omitted", dns.Servers[maxDNSNameservers:]))
		dns.Servers = dns.Servers[:maxDNSNameservers]
	}
	if len(dns.Searches) > maxDNSSearchPaths {
		log.Warn("too many search domains, keeping the first ones", zap.Int("limit", maxDNSSearchPaths))
		dns.Searches = dns.Searches[:maxDNSSearchPaths]
	}
	if n := len(strings.Join(dns.Searches, " ")); n > maxDNSSearchListChars {
		total := 0
		keep := 0
		for i, s := range dns.Searches {
			if i > 0 {
				total++
			}
			total += len(s)
			if total > maxDNSSearchListChars {
				break
			}
			keep = i + 1
		}
		log.Warn("search list too long, keeping the first domains", zap.Int("limit", maxDNSSearchListChars))
		dns.Searches = dns.Searches[:keep]
	}
	return dns
}
