package kuberuntime

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet-managed /etc/hosts (kubelet makeHostsMount, ensureHostsFile,
// managedHostsFileContent, nodeHostsFileContent), which the e2e suite's
// KubeletManagedEtcHosts spec checks.
func TestMakeHostsMount(t *testing.T) {
	nodeHosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(nodeHosts, []byte("127.0.0.1 localhost\n10.0.0.5 node-a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	aliases := []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}}
	for _, tc := range []struct {
		desc        string
		hostNetwork bool
		subdomain   string
		override    *string
		aliases     []v1.HostAlias
		podIPs      []string
		ownMount    bool
		want        string // "" for no mount
	}{
		{desc: "pod network", podIPs: []string{"10.88.0.7"}, want: "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.88.0.7\tweb\n"},
		{desc: "subdomain and aliases", podIPs: []string{"10.88.0.7", "fd00::7"}, subdomain: "sub", aliases: aliases,
			want: "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
				"10.88.0.7\tweb.sub.ns.svc.cluster.local\tweb\nfd00::7\tweb.sub.ns.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n"},
		// HostnameOverride: the override alone, no FQDN even with a
		// subdomain (kubelet GeneratePodHostNameAndDomain returns no domain).
		{desc: "hostnameOverride", podIPs: []string{"10.88.0.7"}, subdomain: "sub", override: new("my.host"),
			want: "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.88.0.7\tmy.host\n"},
		{desc: "host network copies the node's", hostNetwork: true, aliases: aliases,
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.0.0.5 node-a\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n"},
		{desc: "no IP yet", want: ""},
		{desc: "the container mounts /etc/hosts itself", podIPs: []string{"10.88.0.7"}, ownMount: true, want: ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
				Spec: v1.PodSpec{HostNetwork: tc.hostNetwork, Subdomain: tc.subdomain, HostnameOverride: tc.override, HostAliases: tc.aliases, Containers: []v1.Container{{Name: "c"}}}}
			if tc.ownMount {
				pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}
			}
			fs := newFakeFS()
			m, err := makeHostsMount(t.Context(), pod, &pod.Spec.Containers[0], tc.podIPs,
				ContainerOptions{FS: fs, PodContainersRoot: "/pods", ClusterDomain: "cluster.local"}, nodeHosts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if m != nil {
					t.Fatalf("mount %v, want none", m)
				}
				return
			}
			if m == nil || m.ContainerPath != "/etc/hosts" || m.HostPath != "/pods/u1/etc-hosts" || m.Readonly {
				t.Fatalf("mount %v, want /pods/u1/etc-hosts at /etc/hosts, writable", m)
			}
			if got := string(fs.data[m.HostPath]); got != tc.want {
				t.Errorf("hosts file:\n%q\nwant\n%q", got, tc.want)
			}
			if fs.files[m.HostPath] != 0o644 {
				t.Errorf("hosts file mode %v, want 0644", fs.files[m.HostPath])
			}
		})
	}
}
