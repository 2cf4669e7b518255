package harness

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The containerd comparison's pod: one busybox container sleeping an hour.
// The direct side builds by hand the CRI configs sync builds from this
// manifest (services/sync/internal/kuberuntime generatePodSandboxConfig and
// generateContainerConfig, themselves the kubelet's), so both sides ask
// containerd for the same work.
const (
	ctrContainerName = "sleep"
	ctrNamespace     = "default"
	ctrGraceSeconds  = 1
)

var ctrCommand = []string{"sleep", "3600"}

// ctrPodManifest is the PodService manifest of one containerd bench pod.
// The grace period is short because `sleep` as PID 1 ignores SIGTERM and
// deleting would otherwise wait the default 30 s.
func ctrPodManifest(name, image string, hostNetwork bool) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"labels":{"app":"bench"}},`+
		`"spec":{"hostNetwork":%t,"restartPolicy":"Always","terminationGracePeriodSeconds":%d,`+
		`"containers":[{"name":%q,"image":%q,"imagePullPolicy":"IfNotPresent","command":["sleep","3600"]}]}}`,
		name, ctrNamespace, hostNetwork, ctrGraceSeconds, ctrContainerName, image)
}

// directPod is what the direct side knows of one pod: what sync derives
// from the manifest and its own flags before calling the runtime.
type directPod struct {
	Name, UID   string
	Image       string
	HostNetwork bool
	// LogsRoot is sync's --pod-logs-root; PodsDir is <state-dir>/pods,
	// where the termination message file goes.
	LogsRoot, PodsDir string
	// TermFile is the termination message file's base name (sync's
	// makeUID: 8 random hex digits).
	TermFile string
	DNS      *runtimeapi.DNSConfig
	// Seen is when the pod was first seen (the config.seen annotation).
	Seen time.Time
}

// logDir is the pod's log directory, <root>/<namespace>_<name>_<uid>
// (the kubelet's BuildPodLogsDirectory).
func (p directPod) logDir() string {
	return filepath.Join(p.LogsRoot, strings.Join([]string{ctrNamespace, p.Name, p.UID}, "_"))
}

// termMessagePath is the host file mounted at /dev/termination-log.
func (p directPod) termMessagePath() string {
	return filepath.Join(p.PodsDir, p.UID, "containers", ctrContainerName, p.TermFile)
}

// cgroupParent is the cgroupfs parent of a BestEffort pod (the kubelet's
// podContainerManagerImpl.GetPodContainerName, as sync's
// CgroupfsPodCgroupParent).
func (p directPod) cgroupParent() string { return "/kubepods/besteffort/pod" + p.UID }

func (p directPod) namespaces() *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Ipc:     runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
	}
	if p.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

// sandboxConfig is the RunPodSandbox config sync sends for the pod: the
// kubelet's generatePodSandboxConfig with newPodLabels, the pod's
// annotations as sync's config mux leaves them plus sync's managed-by mark,
// host DNS (ClusterFirst without cluster DNS falls back to Default), a
// hostname only off the host network, and the BestEffort Linux config.
func sandboxConfig(p directPod) *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: ctrNamespace, Uid: p.UID},
		Labels: map[string]string{
			"app":                         "bench",
			"io.kubernetes.pod.name":      p.Name,
			"io.kubernetes.pod.namespace": ctrNamespace,
			"io.kubernetes.pod.uid":       p.UID,
		},
		Annotations: map[string]string{
			"kubernetes.io/config.source": "api",
			"kubernetes.io/config.seen":   p.Seen.UTC().Format(time.RFC3339Nano),
			"splitlet.dev/managed-by":     "splitlet-sync",
		},
		DnsConfig:    p.DNS,
		LogDirectory: p.logDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: p.cgroupParent(),
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
				NamespaceOptions: p.namespaces(),
			},
			Sysctls: map[string]string{},
			// BestEffort: minimum shares, the CFS period and no quota
			// (calculateLinuxResources with no requests or limits).
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
			Overhead:  &runtimeapi.LinuxContainerResources{},
		},
	}
	if !p.HostNetwork {
		cfg.Hostname = p.Name
	}
	return cfg
}

// containerConfig is the CreateContainer config sync sends for the pod's
// container (the kubelet's generateContainerConfig): labels naming the pod
// and container, the annotations sync reads back after a restart, the log
// path relative to the sandbox's log directory, the termination message
// mount, and the BestEffort Linux config with the default masked and
// read-only paths and an unconfined seccomp profile (no --seccomp-default).
// imageRef is the image ID ImageStatus returned; busybox has no user, so
// run_as_username is empty as sync leaves it.
func containerConfig(p directPod, imageRef string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: ctrContainerName},
		Image:    &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: p.Image},
		Command:  append([]string(nil), ctrCommand...),
		Labels: map[string]string{
			"io.kubernetes.pod.name":       p.Name,
			"io.kubernetes.pod.namespace":  ctrNamespace,
			"io.kubernetes.pod.uid":        p.UID,
			"io.kubernetes.container.name": ctrContainerName,
		},
		Annotations: map[string]string{
			"io.kubernetes.container.hash":                     containerHash(p.Image),
			"io.kubernetes.container.restartCount":             "0",
			"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
			"io.kubernetes.container.terminationMessagePolicy": "File",
			"io.kubernetes.pod.terminationGracePeriod":         fmt.Sprint(ctrGraceSeconds),
		},
		Mounts:  []*runtimeapi.Mount{{HostPath: p.termMessagePath(), ContainerPath: "/dev/termination-log"}},
		LogPath: filepath.Join(ctrContainerName, "0.log"),
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: p.namespaces(),
				MaskedPaths: []string{
					"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
					"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
					"/sys/firmware", "/sys/devices/virtual/powercap",
				},
				ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
				Seccomp:       &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			},
		},
	}
}

// containerHash stands in for the kubelet's HashContainer: the runtime
// stores it as an opaque annotation, so only its shape matters here.
func containerHash(image string) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s|%s|%s", ctrContainerName, image, strings.Join(ctrCommand, " "))
	return fmt.Sprintf("%x", h.Sum32())
}

// parseResolvConf reads nameservers, search domains and options from a
// resolv.conf, as sync's (and the kubelet's) parseResolvConf does for pods
// that inherit the host's DNS.
func parseResolvConf(data string) *runtimeapi.DNSConfig {
	dns := &runtimeapi.DNSConfig{}
	for line := range strings.SplitSeq(data, "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) >= 2 {
				dns.Servers = append(dns.Servers, f[1])
			}
		case "search":
			// The last search line wins, as in the resolver.
			dns.Searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					dns.Searches = append(dns.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			dns.Options = append(dns.Options, f[1:]...)
		}
	}
	return dns
}
