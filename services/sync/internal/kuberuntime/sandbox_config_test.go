package kuberuntime

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const testResolvConf = `# generated
nameserver 192.168.1.1
nameserver 192.168.1.2
search corp.example. home.example
options ndots:2 timeout:1
options ndots:3
`

// fakeReadFile serves one file and records what was asked for.
type fakeReadFile struct {
	path, data string
	read       []string
}

func (f *fakeReadFile) ReadFile(path string) ([]byte, error) {
	f.read = append(f.read, path)
	if path != f.path {
		return nil, os.ErrNotExist
	}
	return []byte(f.data), nil
}

func sandboxOpts() (SandboxOptions, *fakeReadFile) {
	f := &fakeReadFile{path: "/host/resolv.conf", data: testResolvConf}
	return SandboxOptions{
		ClusterDNS:    []string{"10.96.0.10"},
		ClusterDomain: "cluster.local",
		ResolvConf:    "/host/resolv.conf",
		ReadFile:      f.ReadFile,
	}, f
}

func TestGeneratePodSandboxConfigPlainPod(t *testing.T) {
	pod := makeTestPod()
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"note": "x"}
	opts, _ := sandboxOpts()

	cfg, err := generatePodSandboxConfig(context.Background(), pod, 3, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1", Attempt: 3}
	if m := cfg.GetMetadata(); m.Name != wantMeta.Name || m.Namespace != wantMeta.Namespace || m.Uid != wantMeta.Uid || m.Attempt != wantMeta.Attempt {
		t.Errorf("metadata = %v, want %v", m, wantMeta)
	}
	wantLabels := map[string]string{"app": "web", KubernetesPodNameLabel: "web", KubernetesPodNamespaceLabel: "default", KubernetesPodUIDLabel: "uid-1"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
	}
	if !reflect.DeepEqual(cfg.Annotations, pod.Annotations) {
		t.Errorf("annotations = %v, want %v", cfg.Annotations, pod.Annotations)
	}
	cfg.Annotations["mutated"] = "y"
	if _, ok := pod.Annotations["mutated"]; ok {
		t.Error("sandbox annotations share the pod's map")
	}
	if cfg.Hostname != "web" {
		t.Errorf("hostname = %q, want the pod name", cfg.Hostname)
	}
	if want := "/var/log/pods/default_web_uid-1"; cfg.LogDirectory != want {
		t.Errorf("log directory = %q, want %q", cfg.LogDirectory, want)
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetNetwork() != runtimeapi.NamespaceMode_POD || ns.GetIpc() != runtimeapi.NamespaceMode_POD || ns.GetPid() != runtimeapi.NamespaceMode_CONTAINER {
		t.Errorf("namespaces = %v, want network POD, ipc POD, pid CONTAINER", ns)
	}
	if got := cfg.GetLinux().GetSecurityContext().GetSeccomp().GetProfileType(); got != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("sandbox seccomp = %v, want RuntimeDefault", got)
	}
	if cfg.GetLinux().GetSecurityContext().GetPrivileged() {
		t.Error("sandbox privileged without a privileged container")
	}
	if len(cfg.PortMappings) != 0 {
		t.Errorf("port mappings = %v, want none", cfg.PortMappings)
	}
}

func TestGeneratePodSandboxConfigLogDirectory(t *testing.T) {
	pod := makeTestPod()
	opts, _ := sandboxOpts()
	opts.PodLogsRoot = "/srv/logs"
	cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/srv/logs/default_web_uid-1"; cfg.LogDirectory != want {
		t.Errorf("log directory = %q, want %q", cfg.LogDirectory, want)
	}
}

func TestGeneratePodSandboxConfigHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-bcd"
	cases := []struct {
		desc    string
		mutate  func(*v1.Pod)
		want    string
		wantErr error
	}{
		{desc: "pod name", mutate: func(*v1.Pod) {}, want: "web"},
		{desc: "spec.hostname wins", mutate: func(p *v1.Pod) { p.Spec.Hostname = "box" }, want: "box"},
		{desc: "host network: none", mutate: func(p *v1.Pod) { p.Spec.HostNetwork = true; p.Spec.Hostname = "box" }, want: ""},
		{desc: "long name cut to 63 without trailing dash", mutate: func(p *v1.Pod) { p.Name = long }, want: strings.Repeat("a", 62)},
		{desc: "invalid hostname", mutate: func(p *v1.Pod) { p.Spec.Hostname = "Not_Valid" }, wantErr: errdefs.ErrInvalidArgument},
		{desc: "subdomain without FQDN keeps short name", mutate: func(p *v1.Pod) { p.Spec.Subdomain = "sub" }, want: "web"},
		{
			desc:   "FQDN as hostname",
			mutate: func(p *v1.Pod) { p.Spec.Subdomain = "sub"; p.Spec.SetHostnameAsFQDN = new(true) },
			want:   "web.sub.default.svc.cluster.local",
		},
		{
			desc: "FQDN too long",
			mutate: func(p *v1.Pod) {
				p.Spec.Hostname = strings.Repeat("h", 40)
				p.Spec.Subdomain = "sub"
				p.Spec.SetHostnameAsFQDN = new(true)
			},
			wantErr: errdefs.ErrInvalidArgument,
		},
		// HostnameOverride (kubelet GeneratePodHostNameAndDomain): the
		// override wins over spec.hostname and the pod name, and leaves no
		// domain, so setHostnameAsFQDN adds nothing.
		{desc: "hostnameOverride wins", mutate: func(p *v1.Pod) { p.Spec.Hostname = "box"; p.Spec.HostnameOverride = new("my.host-1") }, want: "my.host-1"},
		{
			desc: "hostnameOverride has no domain, even with subdomain and FQDN",
			mutate: func(p *v1.Pod) {
				p.Spec.HostnameOverride = new("override")
				p.Spec.Subdomain = "sub"
				p.Spec.SetHostnameAsFQDN = new(true)
			},
			want: "override",
		},
		{desc: "hostnameOverride cut to 63 without trailing dot", mutate: func(p *v1.Pod) { p.Spec.HostnameOverride = new(strings.Repeat("a", 62) + ".bc") }, want: strings.Repeat("a", 62)},
		{desc: "hostnameOverride not a DNS subdomain", mutate: func(p *v1.Pod) { p.Spec.HostnameOverride = new("Not_Valid") }, wantErr: errdefs.ErrInvalidArgument},
		{desc: "hostnameOverride ignored on the host network", mutate: func(p *v1.Pod) { p.Spec.HostNetwork = true; p.Spec.HostnameOverride = new("override") }, want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			tc.mutate(pod)
			opts, _ := sandboxOpts()
			cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Hostname != tc.want {
				t.Errorf("hostname = %q, want %q", cfg.Hostname, tc.want)
			}
		})
	}
}

func TestGeneratePodSandboxConfigNamespaces(t *testing.T) {
	cases := []struct {
		desc   string
		mutate func(*v1.Pod)
		want   *runtimeapi.NamespaceOption
	}{
		{
			desc:   "host network",
			mutate: func(p *v1.Pod) { p.Spec.HostNetwork = true },
			want:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER},
		},
		{
			desc:   "host PID and IPC",
			mutate: func(p *v1.Pod) { p.Spec.HostPID = true; p.Spec.HostIPC = true },
			want:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE},
		},
		{
			desc:   "shareProcessNamespace",
			mutate: func(p *v1.Pod) { p.Spec.ShareProcessNamespace = new(true) },
			want:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD},
		},
		{
			desc:   "host PID wins over shareProcessNamespace",
			mutate: func(p *v1.Pod) { p.Spec.ShareProcessNamespace = new(true); p.Spec.HostPID = true },
			want:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_NODE},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			tc.mutate(pod)
			opts, _ := sandboxOpts()
			cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
			if got.GetNetwork() != tc.want.Network || got.GetIpc() != tc.want.Ipc || got.GetPid() != tc.want.Pid {
				t.Errorf("namespaces = %v, want %v", got, tc.want)
			}
			// The sandbox's network mode must be what podSandboxChanged
			// expects, or every sync would recreate the sandbox.
			if got.GetNetwork() != networkNamespaceForPod(pod) {
				t.Errorf("network mode %v disagrees with networkNamespaceForPod %v", got.GetNetwork(), networkNamespaceForPod(pod))
			}
		})
	}
}

func TestGeneratePodSandboxConfigSecurityContext(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser:          new(int64(1000)),
		RunAsGroup:         new(int64(2000)),
		FSGroup:            new(int64(3000)),
		SupplementalGroups: []int64{4000, 4001},
		Sysctls: []v1.Sysctl{
			{Name: "net.core.somaxconn", Value: "1024"},
			{Name: "net/ipv4/conf/eno2.100/rp_filter", Value: "1"},
		},
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
	}
	pod.Spec.InitContainers = []v1.Container{{Name: "init", SecurityContext: &v1.SecurityContext{Privileged: new(true)}}}
	opts, _ := sandboxOpts()
	cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.GetLinux().GetSecurityContext()
	if sc.GetRunAsUser().GetValue() != 1000 || sc.GetRunAsGroup().GetValue() != 2000 {
		t.Errorf("run as = %v/%v, want 1000/2000", sc.GetRunAsUser(), sc.GetRunAsGroup())
	}
	if want := []int64{3000, 4000, 4001}; !reflect.DeepEqual(sc.SupplementalGroups, want) {
		t.Errorf("supplemental groups = %v, want %v (fsGroup first)", sc.SupplementalGroups, want)
	}
	// A slash-separated name reaches the runtime dot-separated (its dots
	// become slashes).
	if want := map[string]string{"net.core.somaxconn": "1024", "net.ipv4.conf.eno2/100.rp_filter": "1"}; !reflect.DeepEqual(cfg.GetLinux().GetSysctls(), want) {
		t.Errorf("sysctls = %v, want %v", cfg.GetLinux().GetSysctls(), want)
	}
	if !sc.GetPrivileged() {
		t.Error("sandbox not privileged although an init container is")
	}
	if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("sandbox seccomp = %v, want RuntimeDefault whatever the pod asks", sc.GetSeccomp())
	}

	bad := makeTestPod()
	policy := v1.SupplementalGroupsPolicy("Bogus")
	bad.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &policy}
	if _, err := generatePodSandboxConfig(context.Background(), bad, 0, opts); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("unknown supplementalGroupsPolicy: err = %v, want invalid argument", err)
	}
}

func TestGeneratePodSandboxConfigPortMappings(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.Containers[0].Ports = []v1.ContainerPort{
		{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
		{Name: "dns", ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP, HostIP: "127.0.0.1"},
		{Name: "http", ContainerPort: 81, HostPort: 8081, Protocol: v1.ProtocolTCP}, // repeated name: dropped
	}
	pod.Spec.Containers[2].Ports = []v1.ContainerPort{
		{ContainerPort: 9090, Protocol: v1.ProtocolSCTP},
		{ContainerPort: 9090, Protocol: v1.ProtocolSCTP}, // identical unnamed: dropped
		{ContainerPort: 7000},                            // no protocol: TCP
	}
	opts, _ := sandboxOpts()
	cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.PortMapping{
		{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
		{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
		{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 9090},
		{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 7000},
	}
	if len(cfg.PortMappings) != len(want) {
		t.Fatalf("port mappings = %v, want %v", cfg.PortMappings, want)
	}
	for i, w := range want {
		g := cfg.PortMappings[i]
		if g.Protocol != w.Protocol || g.ContainerPort != w.ContainerPort || g.HostPort != w.HostPort || g.HostIp != w.HostIp {
			t.Errorf("port mapping %d = %v, want %v", i, g, w)
		}
	}
}

func guaranteedResources(cpu, mem string) v1.ResourceRequirements {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

func TestGeneratePodSandboxConfigCgroupParent(t *testing.T) {
	cases := []struct {
		desc   string
		mutate func(*v1.Pod)
		custom CgroupParentFunc
		want   string
	}{
		{desc: "best effort", mutate: func(*v1.Pod) {}, want: "/kubepods/besteffort/poduid-1"},
		{
			desc: "burstable",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
			},
			want: "/kubepods/burstable/poduid-1",
		},
		{
			desc: "guaranteed sits directly under kubepods",
			mutate: func(p *v1.Pod) {
				for i := range p.Spec.Containers {
					p.Spec.Containers[i].Resources = guaranteedResources("100m", "64Mi")
				}
			},
			want: "/kubepods/poduid-1",
		},
		{
			desc:   "custom function gets the class",
			mutate: func(*v1.Pod) {},
			custom: func(p *v1.Pod, class v1.PodQOSClass) string {
				return "kubepods-" + strings.ToLower(string(class)) + "-pod" + string(p.UID) + ".slice"
			},
			want: "kubepods-besteffort-poduid-1.slice",
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			tc.mutate(pod)
			opts, _ := sandboxOpts()
			opts.CgroupParent = tc.custom
			cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.GetLinux().GetCgroupParent(); got != tc.want {
				t.Errorf("cgroup parent = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGeneratePodSandboxConfigResources(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.Containers = []v1.Container{
		{Name: "a", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		}},
		{Name: "b", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("300m")},
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
		}},
	}
	// An init container bigger than the sum decides the cpu request.
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
	}}}
	pod.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("120Mi")}
	opts, _ := sandboxOpts()
	cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	res := cfg.GetLinux().GetResources()
	if res.CpuShares != 1024 {
		t.Errorf("cpu shares = %d, want 1024 (1 cpu from the init container)", res.CpuShares)
	}
	if res.CpuQuota != 50000 || res.CpuPeriod != 100000 {
		t.Errorf("cpu quota/period = %d/%d, want 50000/100000", res.CpuQuota, res.CpuPeriod)
	}
	if want := int64(192 << 20); res.MemoryLimitInBytes != want {
		t.Errorf("memory limit = %d, want %d", res.MemoryLimitInBytes, want)
	}
	ov := cfg.GetLinux().GetOverhead()
	if ov.CpuShares != 256 || ov.CpuQuota != 25000 || ov.MemoryLimitInBytes != 120<<20 {
		t.Errorf("overhead = %v, want shares 256, quota 25000, memory 120Mi", ov)
	}

	opts.CFS = CPUCFS{QuotaPeriod: 20 * time.Millisecond}
	cfg, err = generatePodSandboxConfig(context.Background(), pod, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res, ov := cfg.GetLinux().GetResources(), cfg.GetLinux().GetOverhead(); res.CpuQuota != 10000 || res.CpuPeriod != 20000 || ov.CpuQuota != 5000 || ov.CpuPeriod != 20000 {
		t.Errorf("a 20ms period: quota/period = %d/%d, overhead %d/%d; want 10000/20000 and 5000/20000", res.CpuQuota, res.CpuPeriod, ov.CpuQuota, ov.CpuPeriod)
	}

	opts.CFS = CPUCFS{DisableQuota: true}
	cfg, err = generatePodSandboxConfig(context.Background(), pod, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res := cfg.GetLinux().GetResources(); res.CpuQuota != 0 || res.CpuPeriod != 0 {
		t.Errorf("quota disabled: quota/period = %d/%d, want 0/0", res.CpuQuota, res.CpuPeriod)
	}
}

func TestGeneratePodSandboxConfigDNS(t *testing.T) {
	hostSearch := []string{"corp.example", "home.example"}
	hostOptions := []string{"ndots:3", "timeout:1"}
	cases := []struct {
		desc   string
		mutate func(*v1.Pod)
		opts   func(*SandboxOptions)
		want   *runtimeapi.DNSConfig
	}{
		{
			desc:   "ClusterFirst",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirst },
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: append([]string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, hostSearch...),
				Options:  []string{"ndots:5"},
			},
		},
		{
			desc:   "ClusterFirst on host network is Default",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirst; p.Spec.HostNetwork = true },
			want:   &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "192.168.1.2"}, Searches: hostSearch, Options: hostOptions},
		},
		{
			desc:   "ClusterFirstWithHostNet on host network",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirstWithHostNet; p.Spec.HostNetwork = true },
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: append([]string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, hostSearch...),
				Options:  []string{"ndots:5"},
			},
		},
		{
			desc:   "ClusterFirst without cluster DNS falls back to Default",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirst },
			opts:   func(o *SandboxOptions) { o.ClusterDNS = nil },
			want:   &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "192.168.1.2"}, Searches: hostSearch, Options: hostOptions},
		},
		{
			desc:   "ClusterFirst without cluster domain keeps host searches only",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirst },
			opts:   func(o *SandboxOptions) { o.ClusterDomain = "" },
			want:   &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: hostSearch, Options: []string{"ndots:5"}},
		},
		{
			desc:   "Default",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault },
			want:   &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "192.168.1.2"}, Searches: hostSearch, Options: hostOptions},
		},
		{
			desc:   "Default without host resolv.conf",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault },
			opts:   func(o *SandboxOptions) { o.NoResolvConf = true; o.NodeIPs = []string{"192.168.1.10", "fd00::10"} },
			want:   &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1", "::1"}, Searches: []string{"."}},
		},
		{
			desc: "None uses only dnsConfig",
			mutate: func(p *v1.Pod) {
				p.Spec.DNSPolicy = v1.DNSNone
				p.Spec.DNSConfig = &v1.PodDNSConfig{
					Nameservers: []string{"1.1.1.1"},
					Searches:    []string{"my.example"},
					Options:     []v1.PodDNSConfigOption{{Name: "edns0"}, {Name: "ndots", Value: new("1")}},
				}
			},
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"my.example"}, Options: []string{"edns0", "ndots:1"}},
		},
		{
			desc: "dnsConfig merged into ClusterFirst, duplicates dropped, option replaced, limit of three servers",
			mutate: func(p *v1.Pod) {
				p.Spec.DNSPolicy = v1.DNSClusterFirst
				p.Spec.DNSConfig = &v1.PodDNSConfig{
					Nameservers: []string{"10.96.0.10", "1.1.1.1", "8.8.8.8", "9.9.9.9"},
					Searches:    []string{"svc.cluster.local", "extra.example"},
					Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: new("2")}, {Name: "single-request"}},
				}
			},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10", "1.1.1.1", "8.8.8.8"},
				Searches: append(append([]string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, hostSearch...), "extra.example"),
				Options:  []string{"ndots:2", "single-request"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			tc.mutate(pod)
			opts, _ := sandboxOpts()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			cfg, err := generatePodSandboxConfig(context.Background(), pod, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.GetDnsConfig()
			if !reflect.DeepEqual(got.GetServers(), tc.want.Servers) || !reflect.DeepEqual(got.GetSearches(), tc.want.Searches) ||
				!reflect.DeepEqual(got.GetOptions(), tc.want.Options) {
				t.Errorf("dns = %v\nwant  %v", got, tc.want)
			}
		})
	}
}

func TestGeneratePodSandboxConfigResolvConfErrors(t *testing.T) {
	pod := makeTestPod()
	opts, f := sandboxOpts()
	opts.ResolvConf = ""
	if _, err := generatePodSandboxConfig(context.Background(), pod, 0, opts); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want the read error", err)
	}
	if len(f.read) != 1 || f.read[0] != DefaultResolvConf {
		t.Errorf("read %v, want the default %s", f.read, DefaultResolvConf)
	}
}

func TestParseResolvConf(t *testing.T) {
	cases := []struct {
		desc string
		data string
		want *runtimeapi.DNSConfig
	}{
		{desc: "empty", data: "", want: &runtimeapi.DNSConfig{}},
		{
			desc: "comments, last search wins, root dropped",
			data: "; comment\nsearch a.example\nnameserver 1.2.3.4 # trailing\nsearch . b.example. c\nnameserver\n",
			want: &runtimeapi.DNSConfig{Servers: []string{"1.2.3.4"}, Searches: []string{"b.example", "c"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got := parseResolvConf(tc.data)
			if !reflect.DeepEqual(got.Servers, tc.want.Servers) || !reflect.DeepEqual(got.Searches, tc.want.Searches) ||
				!reflect.DeepEqual(got.Options, tc.want.Options) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
