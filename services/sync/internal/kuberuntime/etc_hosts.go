package kuberuntime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// etcHostsPath is where containers see the managed hosts file, and where
// the node's own is read for host-network pods.
const etcHostsPath = "/etc/hosts"

// The first line of a managed hosts file; the e2e suite's
// KubeletManagedEtcHosts spec looks for it.
const (
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// shouldMountHostsFile reports whether the pod's containers get a managed
// /etc/hosts: once the pod has an IP, or on the host network. Matches the
// kubelet's shouldMountHostsFile (Linux).
func shouldMountHostsFile(pod *v1.Pod, podIPs []string) bool {
	return len(podIPs) > 0 || pod.Spec.HostNetwork
}

// makeHostsMount writes the pod's hosts file, <PodContainersRoot>/<uid>/
// etc-hosts, and returns its mount at /etc/hosts; nil when the container
// mounts a volume there itself, or the pod gets none. Matches the
// kubelet's makeMounts (mountEtcHostsFile), makeHostsMount and
// ensureHostsFile: the file is rewritten at every container start.
func makeHostsMount(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, opts ContainerOptions, nodeHostsFile string) (*runtimeapi.Mount, error) {
	if !shouldMountHostsFile(pod, podIPs) {
		return nil, nil
	}
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == etcHostsPath {
			return nil, nil
		}
	}
	var content []byte
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(nodeHostsFile)
		if err != nil {
			return nil, fmt.Errorf("read the node's hosts file for a host-network pod: %w", err)
		}
		content = append([]byte(managedHostsHeaderWithHostNetwork), node...)
		content = append(content, hostsEntriesFromHostAliases(pod.Spec.HostAliases)...)
	} else {
		hostname, domain, err := generatePodHostNameAndDomain(ctx, pod, opts.ClusterDomain)
		if err != nil {
			return nil, err
		}
		content = managedHostsFileContent(podIPs, hostname, domain, pod.Spec.HostAliases)
	}
	dir := filepath.Join(orDefault(opts.PodContainersRoot, DefaultPodsDir), string(pod.UID))
	fs := opts.fs()
	if err := fs.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create pod directory for /etc/hosts: %w", err)
	}
	path := filepath.Join(dir, "etc-hosts")
	if err := fs.WriteFile(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("write /etc/hosts of pod: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path, SelinuxRelabel: true}, nil
}

// managedHostsFileContent is the hosts file of a pod on the pod network:
// localhost, the IPv6 names, each pod IP with the pod's hostname (fully
// qualified first with a subdomain), then the host aliases. Matches the
// kubelet's managedHostsFileContent.
func managedHostsFileContent(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostsEntriesFromHostAliases(aliases))
	return b.Bytes()
}

// hostsEntriesFromHostAliases is the kubelet's section for spec.hostAliases:
// one line per IP with all its names.
func hostsEntriesFromHostAliases(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}
