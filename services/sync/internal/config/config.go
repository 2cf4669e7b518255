// Package config turns splitlet-sync's command line into a Config, with the
// defaults documented on each flag. Hidden flags tune timings for tests and
// do not appear in -h.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/splitlet/splitlet/internal/apiauth"
	"github.com/splitlet/splitlet/internal/criclient"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/sync/internal/imagegc"
	"github.com/splitlet/splitlet/services/sync/internal/sysctl"
)

// Defaults.
const (
	// DefaultListen is the PodService address: a unix socket only its
	// owner and group may use (internal/apiauth). A TCP address needs a
	// token or mutual TLS; 7443 is the port the docs use, apart from the
	// gateway's metrics port (9101) and the kubelet's (10250, 10255, 10248).
	DefaultListen          = "unix:///run/splitlet/sync.sock"
	DefaultRuntimeEndpoint = "unix:///run/splitlet/gateway.sock"
	DefaultStateDir        = "/var/lib/splitlet/sync"
	DefaultPodLogsRoot     = "/var/log/pods"
	// DefaultCPUCFSQuotaPeriod is the kubelet's cpuCFSQuotaPeriod default.
	DefaultCPUCFSQuotaPeriod = 100 * time.Millisecond
	// DefaultSystemLogDir is the kubelet's nodeLogDir.
	DefaultSystemLogDir = "/var/log/"
	// DefaultResyncInterval is the kubelet's --sync-frequency. Events, the
	// 1 s relist, probe results, active deadlines and the back-off retry
	// (BackOffBase after a failed sync) start every sync that has a cause;
	// the resync only catches what none of them reports, and at 10 s it was
	// half of an idle node's CPU (BENCHMARKS.md, thirteenth session).
	DefaultResyncInterval = time.Minute
	// DefaultRelistInterval is the kubelet's PLEG relist period.
	DefaultRelistInterval = time.Second
	// DefaultFileCheckFrequency is how often the manifest directory is
	// re-read (the kubelet's --file-check-frequency is 20 s and it watches
	// with inotify as well; sync only polls, so it polls more often).
	DefaultFileCheckFrequency = 5 * time.Second
	// DefaultHTTPCheckFrequency is the kubelet's --http-check-frequency.
	DefaultHTTPCheckFrequency = 20 * time.Second
	// DefaultAdmissionTimeout bounds one call to splitlet-admission, which
	// is local and answers in well under a millisecond.
	DefaultAdmissionTimeout = 2 * time.Second
	// DefaultBackOffBase is the kubelet's crash-loop and image-pull back-off
	// start (10 s).
	DefaultBackOffBase = 10 * time.Second
	// DefaultMaxContainerRestartPeriod is the kubelet's default
	// crashLoopBackOff.maxContainerRestartPeriod, MaxContainerBackOff.
	DefaultMaxContainerRestartPeriod = 300 * time.Second
	// DefaultImagePullBackOffMax is the kubelet's MaxImageBackOff.
	DefaultImagePullBackOffMax = 300 * time.Second
	// DefaultContainerGCPeriod is the kubelet's ContainerGCPeriod.
	DefaultContainerGCPeriod = time.Minute
	// defaultPodResourcesSocket stands for the default of
	// --pod-resources-socket in -h, which depends on --state-dir: the
	// kubelet's <root-dir>/pod-resources/kubelet.sock with sync's state
	// directory as its root directory. Not the kubelet's own
	// /var/lib/kubelet: sync may run beside a kubelet.
	defaultPodResourcesSocket = "<state-dir>/pod-resources/kubelet.sock"
)

// Config is splitlet-sync's configuration.
type Config struct {
	// Listen is where the PodService is served and how its callers
	// authenticate.
	Listen             apiauth.Listen
	MetricsAddr        string
	RuntimeEndpoint    string
	ManifestDir        string
	FileCheckFrequency time.Duration
	// ManifestURL is the kubelet's --manifest-url: a URL serving static
	// pods, fetched every HTTPCheckFrequency with ManifestURLHeader.
	ManifestURL        string
	ManifestURLHeader  http.Header
	HTTPCheckFrequency time.Duration
	StateDir           string
	NodeName           string
	NodeIPs            []string
	PodLogsRoot        string
	ResyncInterval     time.Duration
	RelistInterval     time.Duration
	// RuntimeRequestTimeout bounds each CRI call (criclient.Timeouts), the
	// kubelet's --runtime-request-timeout.
	RuntimeRequestTimeout time.Duration
	LogLevel              zapcore.Level
	// BackOffBase is the first restart and pull back-off delay; also the
	// retry period of a failed pod sync (hidden flag, for tests).
	BackOffBase time.Duration
	// MaxContainerRestartPeriod caps the crash-loop back-off: the
	// kubelet's crashLoopBackOff.maxContainerRestartPeriod
	// (KubeletCrashLoopBackOffMax), 1 s to 300 s, default 300 s.
	MaxContainerRestartPeriod time.Duration
	// ImagePullBackOffMax caps the image-pull back-off, the kubelet's
	// MaxImageBackOff (300 s; hidden flag, for tests).
	ImagePullBackOffMax time.Duration
	// ContainerGCPeriod is the dead-container garbage collection period
	// (the kubelet's fixed ContainerGCPeriod, 1 min; hidden flag, for
	// tests).
	ContainerGCPeriod time.Duration
	// ImageGC is the image garbage collector's policy (the kubelet's
	// imageGCHighThresholdPercent, imageGCLowThresholdPercent,
	// imageMinimumGCAge and imageMaximumGCAge).
	ImageGC imagegc.Policy
	// Admission is how splitlet-admission is reached (Endpoint, and the
	// credential it asks for); an empty Endpoint admits every pod without
	// asking (and evicts nothing).
	Admission apiauth.Dial
	// AdmissionTimeout bounds each Admit call.
	AdmissionTimeout time.Duration
	// AdmissionFailurePolicy is "Fail" (a pod waits while admission cannot
	// be asked) or "Ignore" (it is admitted).
	AdmissionFailurePolicy string
	// Kubeconfig is the kubeconfig of the Kubernetes API server whose pods
	// bound to NodeName this splitlet runs (the DaemonSet deployment); empty
	// disables the API server source, node registration and status writing.
	Kubeconfig string
	// BootstrapKubeconfig authenticates the request for sync's client
	// certificate when Kubeconfig holds no valid one (the kubelet's
	// --bootstrap-kubeconfig, TLS bootstrapping); Kubeconfig is then
	// written, pointing at the certificate in CertDir, which is rotated
	// before it expires.
	BootstrapKubeconfig string
	// CertDir keeps the bootstrapped client certificate
	// (kubelet-client-current.pem) and the node API's self-signed pair
	// (the kubelet's --cert-dir); default StateDir/pki.
	CertDir string
	// RegisterNode registers NodeName as a Node and keeps its Lease and
	// status fresh; only meaningful with Kubeconfig.
	RegisterNode bool
	// NodeLabels are extra labels of the registered Node.
	NodeLabels map[string]string
	// RegisterWithTaints are the registered Node's taints (the kubelet's
	// --register-with-taints); by default splitlet's own, so that only
	// pods tolerating it are scheduled here.
	RegisterWithTaints []v1.Taint
	// Profiling serves Go's pprof handlers under /debug/pprof/ next to
	// /metrics (the kubelet's enableProfilingHandler).
	Profiling bool
	// Tracing is the --tracing-* flags (internal/tracing).
	Tracing tracing.Config
	// ClusterDNS are the cluster DNS server IPs given to ClusterFirst pods
	// (the kubelet's --cluster-dns); empty makes them fall back to the
	// node's resolv.conf, as in the kubelet.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (the kubelet's
	// --cluster-domain), searched by ClusterFirst pods.
	ClusterDomain string
	// CgroupRoot is where cgroupfs is mounted; the cgroups of pods sync
	// removed are removed under it. Empty removes none.
	CgroupRoot string
	// CgroupsPerQOS makes each pod's cgroup, with its limits, before its
	// sandbox, and keeps the QoS cgroups (the kubelet's --cgroups-per-qos,
	// true by default).
	CgroupsPerQOS bool
	// AllowedUnsafeSysctls are the sysctl names and patterns (ending in
	// '*') pods may set beyond the safe ones (the kubelet's
	// --allowed-unsafe-sysctls).
	AllowedUnsafeSysctls []string
	// NodeAPIAddr is where the kubelet's node API (logs, pods, metrics for
	// the API server's proxy) is served over TLS; empty serves none.
	NodeAPIAddr string
	// CPUCFSQuota makes CPU limits CFS quotas (the kubelet's cpuCFSQuota,
	// true by default) with the period CPUCFSQuotaPeriod (its
	// cpuCFSQuotaPeriod, 100 ms by default).
	CPUCFSQuota       bool
	CPUCFSQuotaPeriod time.Duration
	// CgroupDriver is the kubelet's cgroupDriver, cgroupfs or systemd: how
	// pod cgroups are named when the runtime does not say (CRI
	// RuntimeConfig).
	CgroupDriver string
	// MemorySwapBehavior is the kubelet's memorySwap.swapBehavior: NoSwap
	// (also the empty string) or LimitedSwap.
	MemorySwapBehavior string
	// FailSwapOn refuses to start on a node with swap on (the kubelet's
	// failSwapOn, true by default).
	FailSwapOn bool
	// SystemLogDir is the directory the node API's /logs/ serves (the
	// kubelet's fixed /var/log/); empty, from --enable-system-log-handler
	// false, answers /logs/ with 405.
	SystemLogDir string
	// SystemLogQuery answers node log queries on /logs/ (the kubelet's
	// enableSystemLogQuery, off by default).
	SystemLogQuery bool
	// NodeAPITLSCertFile and NodeAPITLSKeyFile are its serving certificate
	// (the kubelet's --tls-cert-file/--tls-private-key-file); without
	// them a self-signed pair is made under StateDir/pki.
	NodeAPITLSCertFile string
	NodeAPITLSKeyFile  string
	// RotateServerCertificates has the node API's serving certificate
	// issued by the kubernetes.io/kubelet-serving signer through a
	// CertificateSigningRequest and renewed before it expires (the
	// kubelet's --rotate-server-certificates); needs Kubeconfig.
	RotateServerCertificates bool
	// ClientCAFile verifies client certificates on the node API (the
	// kubelet's --client-ca-file).
	ClientCAFile string
	// PodResourcesSocket is the unix socket of the kubelet's pod-resources
	// API (internal/podresources); empty serves none. By default
	// <state-dir>/pod-resources/kubelet.sock, where the kubelet keeps it
	// under its --root-dir.
	PodResourcesSocket string
	// AnonymousAuth lets node API requests without credentials through as
	// system:anonymous, to be authorized (the kubelet's --anonymous-auth,
	// off as in its configuration file's default).
	AnonymousAuth bool
	// Flags are every flag's name and value once parsed, defaults
	// included, for the node API's /flagz; classified ones read
	// "CLASSIFIED".
	Flags map[string]string
}

// classified flags may carry credentials: /flagz shows "CLASSIFIED" for
// their value, as for a kubelet flag annotated "classified"
// (k8s.io/apiserver's flagz). Headers sent to --manifest-url may be an
// Authorization header; the kubelet masks them when it logs its config.
var classified = map[string]bool{"manifest-url-header": true}

// hidden flags are parsed but left out of the usage text.
var hidden = map[string]bool{"crashloop-backoff-base": true, "image-pull-backoff-max": true, "container-gc-period": true}

// Parse reads args (without the program name); -h yields flag.ErrHelp after
// writing the usage to output.
func Parse(args []string, output io.Writer) (Config, error) {
	host, _ := os.Hostname()
	cfg := Config{}
	var nodeIPs, level, clusterDNS, unsafeSysctls string
	fs := flag.NewFlagSet("splitlet-sync", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprintln(output, "Usage: splitlet-sync [flags]\n\nThe pod sources, pod workers and sync loop of splitlet.\n\nFlags:")
		fs.VisitAll(func(f *flag.Flag) {
			if hidden[f.Name] {
				return
			}
			fmt.Fprintf(output, "  --%s\t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
		})
	}
	cfg.Listen.Address = DefaultListen
	cfg.Listen.AddFlags(fs, "address of the PodService (gRPC, gRPC-Web and Connect JSON over HTTP/1.1 and HTTP/2), also serving /metrics and /healthz")
	fs.StringVar(&cfg.MetricsAddr, "metrics", "", "optional separate address serving Prometheus /metrics and /healthz")
	fs.StringVar(&cfg.RuntimeEndpoint, "runtime-endpoint", DefaultRuntimeEndpoint, "CRI endpoint of splitlet-gateway (unix:///path or host:port)")
	fs.StringVar(&cfg.ManifestDir, "manifest-dir", "", "directory of static pod manifests; empty disables the file source")
	fs.DurationVar(&cfg.FileCheckFrequency, "file-check-frequency", DefaultFileCheckFrequency, "how often the manifest directory is re-read")
	fs.StringVar(&cfg.ManifestURL, "manifest-url", "", "URL serving static pods (one pod, several documents or a PodList); empty disables the HTTP source")
	fs.Func("manifest-url-header", "comma-separated key:value HTTP headers sent to --manifest-url; may be repeated, and a repeated key adds a value in order (the kubelet's format, e.g. 'a:hello,b:again')", func(v string) error {
		if cfg.ManifestURLHeader == nil {
			cfg.ManifestURLHeader = http.Header{}
		}
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return fmt.Errorf("%q is not key:value", kv)
			}
			cfg.ManifestURLHeader.Add(strings.TrimSpace(k), val)
		}
		return nil
	})
	fs.DurationVar(&cfg.HTTPCheckFrequency, "http-check-frequency", DefaultHTTPCheckFrequency, "how often --manifest-url is fetched")
	fs.StringVar(&cfg.StateDir, "state-dir", DefaultStateDir, "directory of sync's state: the pod store (pods.db) and pod volumes")
	fs.StringVar(&cfg.NodeName, "node-name", strings.ToLower(host), "this node's name; static pods get it as a name suffix")
	fs.StringVar(&nodeIPs, "node-ip", "", "comma-separated node IPs for pod status hostIP(s); empty reports none")
	fs.StringVar(&cfg.PodLogsRoot, "pod-logs-root", DefaultPodLogsRoot, "directory of the pods' container logs")
	fs.DurationVar(&cfg.ResyncInterval, "resync-interval", DefaultResyncInterval, "how long after a sync a pod is synced again without any event")
	fs.DurationVar(&cfg.RelistInterval, "relist-interval", DefaultRelistInterval, "period of the runtime relist (PLEG)")
	fs.DurationVar(&cfg.RuntimeRequestTimeout, "runtime-request-timeout", criclient.DefaultRequestTimeout,
		"longest wait for one CRI call (twice that for RunPodSandbox, plus the grace period for StopContainer; image pulls are unbounded), as the kubelet's")
	fs.StringVar(&level, "log-level", "info", "least severe log level written: debug, info, warn or error")
	fs.DurationVar(&cfg.BackOffBase, "crashloop-backoff-base", DefaultBackOffBase, "first crash-loop and image-pull back-off delay")
	fs.DurationVar(&cfg.MaxContainerRestartPeriod, "max-container-restart-period", DefaultMaxContainerRestartPeriod,
		"longest crash-loop back-off delay before a container is restarted, 1s to 300s (the kubelet's crashLoopBackOff.maxContainerRestartPeriod)")
	fs.DurationVar(&cfg.ImagePullBackOffMax, "image-pull-backoff-max", DefaultImagePullBackOffMax, "longest image-pull back-off delay")
	fs.DurationVar(&cfg.ContainerGCPeriod, "container-gc-period", DefaultContainerGCPeriod, "period of dead-container garbage collection")
	cfg.ImageGC = imagegc.DefaultPolicy
	fs.IntVar(&cfg.ImageGC.HighThresholdPercent, "image-gc-high-threshold", cfg.ImageGC.HighThresholdPercent,
		"image filesystem usage percent at or above which unused images are removed, least recently used first (the kubelet's); 100 turns that off")
	fs.IntVar(&cfg.ImageGC.LowThresholdPercent, "image-gc-low-threshold", cfg.ImageGC.LowThresholdPercent,
		"usage percent image garbage collection frees down to (the kubelet's)")
	fs.DurationVar(&cfg.ImageGC.MinAge, "image-minimum-gc-age", cfg.ImageGC.MinAge,
		"how long an unused image is kept at least, since sync first saw it (the kubelet's)")
	fs.DurationVar(&cfg.ImageGC.MaxAge, "image-maximum-gc-age", cfg.ImageGC.MaxAge,
		"remove images unused for longer than this, whatever the usage; 0 never does (the kubelet's)")
	fs.StringVar(&cfg.Admission.Endpoint, "admission-endpoint", "", "splitlet-admission's AdmissionService: unix:///path, host:port or https://host:port; empty admits every pod without asking and evicts nothing")
	fs.StringVar(&cfg.Admission.TokenFile, "admission-token-file", "", "file whose first line is the bearer token sent to --admission-endpoint (admission's --listen-token-file)")
	fs.StringVar(&cfg.Admission.CAFile, "admission-ca-file", "", "PEM CA bundle verifying an https --admission-endpoint")
	fs.StringVar(&cfg.Admission.CertFile, "admission-client-cert-file", "", "PEM client certificate for an https --admission-endpoint (mutual TLS)")
	fs.StringVar(&cfg.Admission.KeyFile, "admission-client-key-file", "", "PEM private key of --admission-client-cert-file")
	fs.DurationVar(&cfg.AdmissionTimeout, "admission-timeout", DefaultAdmissionTimeout, "longest wait for one admission decision")
	fs.StringVar(&cfg.AdmissionFailurePolicy, "admission-failure-policy", "Fail", "when admission cannot be asked: Fail keeps new pods Pending (reason AdmissionUnavailable) and retries, Ignore admits them")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of a Kubernetes API server: run the pods bound to --node-name and write their status back; empty disables the API server source")
	fs.StringVar(&cfg.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig (a bootstrap token) to request sync's client certificate with when --kubeconfig holds no valid one; --kubeconfig is then written, pointing at the certificate in --cert-dir, which is rotated before it expires (the kubelet's TLS bootstrapping)")
	fs.BoolVar(&cfg.RotateServerCertificates, "rotate-server-certificates", false, "request the node API's serving certificate from the kubernetes.io/kubelet-serving signer (a CertificateSigningRequest someone must approve) and renew it before it expires, as the kubelet's flag; needs --kubeconfig and --node-api-addr, and no --node-api-tls-cert-file")
	fs.StringVar(&cfg.CertDir, "cert-dir", "", "directory of the bootstrapped client certificate and the node API's self-signed pair; empty: <state-dir>/pki")
	fs.BoolVar(&cfg.Profiling, "profiling", false, "serve Go's pprof profiles under /debug/pprof/ wherever /metrics is served")
	fs.StringVar(&clusterDNS, "cluster-dns", "", "comma-separated IPs of the cluster DNS servers for pods with dnsPolicy ClusterFirst (the kubelet's --cluster-dns); empty: such pods use the node's resolv.conf")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", "", "the cluster's DNS domain, e.g. cluster.local, searched by ClusterFirst pods (the kubelet's --cluster-domain)")
	fs.BoolVar(&cfg.CgroupsPerQOS, "cgroups-per-qos", true, "create each pod's cgroup (/kubepods[/burstable|/besteffort]/pod<uid>) with the pod's CPU and memory limits before its sandbox, change it in in-place resizes, and keep the QoS cgroups' CPU shares (the kubelet's flag); on the cgroupfs driver, where --cgroup-root is /sys/fs/cgroup and writable")
	fs.StringVar(&cfg.CgroupRoot, "cgroup-root", "/sys/fs/cgroup", "where cgroupfs is mounted: the pod cgroups the runtime made for pods sync ran are removed under it once the pods are gone (the kubelet's cleanupOrphanedPodCgroups); empty leaves them")
	fs.StringVar(&unsafeSysctls, "allowed-unsafe-sysctls", "", "comma-separated unsafe sysctls or sysctl patterns ending in '*' (e.g. 'kernel.msg*,net.core.somaxconn') pods may set besides the safe ones (the kubelet's --allowed-unsafe-sysctls); a pod setting any other sysctl fails with reason SysctlForbidden")
	fs.StringVar(&cfg.NodeAPIAddr, "node-api-addr", "", "address of the kubelet's node API over HTTPS (/containerLogs, /pods, /runningpods/, /healthz, /metrics), which the API server proxies kubectl logs to, e.g. :10250; empty serves none")
	fs.StringVar(&cfg.NodeAPITLSCertFile, "node-api-tls-cert-file", "", "serving certificate of the node API (with --node-api-tls-private-key-file); empty: a self-signed one kept in <state-dir>/pki, as the kubelet's default")
	fs.StringVar(&cfg.NodeAPITLSKeyFile, "node-api-tls-private-key-file", "", "private key of --node-api-tls-cert-file")
	fs.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "CA bundle verifying node API client certificates, e.g. the API server's --kubelet-client-certificate (the kubelet's --client-ca-file)")
	fs.BoolVar(&cfg.AnonymousAuth, "anonymous-auth", false, "let node API requests without credentials through as system:anonymous, to be authorized by SubjectAccessReview (needs --kubeconfig)")
	fs.StringVar(&cfg.PodResourcesSocket, "pod-resources-socket", defaultPodResourcesSocket, "unix socket of the kubelet's pod-resources gRPC API (List, Get, GetAllocatableResources) for monitoring agents; empty serves none")
	fs.StringVar(&cfg.CgroupDriver, "cgroup-driver", "cgroupfs", "cgroupfs or systemd: how pod cgroups are named when the runtime does not report its driver (CRI RuntimeConfig, which containerd 2.x answers), as the kubelet's --cgroup-driver")
	fs.BoolVar(&cfg.CPUCFSQuota, "cpu-cfs-quota", true, "enforce containers' CPU limits as CFS quotas (the kubelet's flag); false sets no quota or period")
	fs.DurationVar(&cfg.CPUCFSQuotaPeriod, "cpu-cfs-quota-period", DefaultCPUCFSQuotaPeriod, "the CFS period CPU limits are quotas of (cpu.cfs_period_us; the kubelet's flag), 1ms to 1s")
	fs.StringVar(&cfg.MemorySwapBehavior, "memory-swap-behavior", "NoSwap", "NoSwap keeps every container off swap; LimitedSwap lets containers of Burstable pods that are not critical use the node's swap in proportion to their memory request (cgroup v2 only), as the kubelet's memorySwap.swapBehavior")
	fs.BoolVar(&cfg.FailSwapOn, "fail-swap-on", true, "refuse to start when the node has swap on (/proc/swaps), as the kubelet's failSwapOn; with false, containers are still kept off swap where the node's cgroups can (NoSwap)")
	systemLogHandler := fs.Bool("enable-system-log-handler", true, "serve --system-log-dir on the node API's /logs/ (the kubelet's enableSystemLogHandler)")
	fs.StringVar(&cfg.SystemLogDir, "system-log-dir", DefaultSystemLogDir, "directory the node API's /logs/ serves (the kubelet's /var/log/); in a container, where the host's /var/log is mounted")
	fs.BoolVar(&cfg.SystemLogQuery, "enable-system-log-query", false, "answer node log queries on /logs/ (?query=<service or file>, sinceTime, untilTime, tailLines, pattern, boot) from journalctl or --system-log-dir (the kubelet's enableSystemLogQuery)")
	registerNode := fs.String("register-node", "", "register --node-name as a Node with a Lease in kube-node-lease (true or false; default true when --kubeconfig is set)")
	nodeLabels := fs.String("node-labels", "", "comma-separated key=value labels added to the registered Node")
	cfg.Tracing.AddFlags(fs)
	taints := fs.String("register-with-taints", DefaultRegisterWithTaints, "comma-separated <key>=<value>:<effect> taints of the registered Node (the kubelet's flag); empty registers none, so that any pod may be scheduled here")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return Config{}, fmt.Errorf("--log-level: %w", err)
	}
	switch cfg.MemorySwapBehavior {
	case "", "NoSwap", "LimitedSwap":
	default:
		return Config{}, fmt.Errorf("invalid configuration: memorySwap.swapBehavior (--memory-swap-behavior) %q must be one of: \"\", \"LimitedSwap\" or \"NoSwap\"", cfg.MemorySwapBehavior)
	}
	if cfg.CgroupDriver != "cgroupfs" && cfg.CgroupDriver != "systemd" {
		return Config{}, fmt.Errorf("--cgroup-driver %q: want cgroupfs or systemd", cfg.CgroupDriver)
	}
	// The kubelet's configuration validation, message included.
	if cfg.CPUCFSQuotaPeriod < time.Millisecond || cfg.CPUCFSQuotaPeriod > time.Second {
		return Config{}, fmt.Errorf("invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) %v must be between 1ms and 1sec, inclusive", cfg.CPUCFSQuotaPeriod)
	}
	if !*systemLogHandler {
		cfg.SystemLogDir = ""
	} else if cfg.SystemLogDir == "" {
		return Config{}, errors.New("--system-log-dir: empty; set --enable-system-log-handler=false to serve no /logs/")
	}
	if nodeIPs != "" {
		cfg.NodeIPs = strings.Split(nodeIPs, ",")
	}
	if clusterDNS != "" {
		for _, ip := range strings.Split(clusterDNS, ",") {
			if net.ParseIP(ip) == nil {
				return Config{}, fmt.Errorf("--cluster-dns: %q is not an IP address", ip)
			}
			cfg.ClusterDNS = append(cfg.ClusterDNS, ip)
		}
	}
	if unsafeSysctls != "" {
		cfg.AllowedUnsafeSysctls = strings.Split(unsafeSysctls, ",")
		if _, err := sysctl.NewAllowlist(cfg.AllowedUnsafeSysctls); err != nil {
			return Config{}, fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
		}
	}
	if cfg.CertDir == "" {
		cfg.CertDir = filepath.Join(cfg.StateDir, "pki")
	}
	if cfg.PodResourcesSocket == defaultPodResourcesSocket {
		cfg.PodResourcesSocket = filepath.Join(cfg.StateDir, "pod-resources", "kubelet.sock")
	}
	if err := cfg.parseNodeRegistration(*registerNode, *nodeLabels, *taints); err != nil {
		return Config{}, err
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	// Last: the flags' values are read through cfg's fields, some set
	// above from others (--cert-dir from --state-dir).
	cfg.Flags = map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if classified[f.Name] {
			cfg.Flags[f.Name] = "CLASSIFIED"
			return
		}
		cfg.Flags[f.Name] = f.Value.String()
	})
	return cfg, nil
}

// parseNodeRegistration reads the flags of the Node sync registers:
// --register-node (only with --kubeconfig), --node-labels and
// --register-with-taints.
func (cfg *Config) parseNodeRegistration(registerNode, nodeLabels, taints string) error {
	cfg.RegisterNode = cfg.Kubeconfig != ""
	if registerNode != "" {
		b, err := strconv.ParseBool(registerNode)
		if err != nil {
			return fmt.Errorf("--register-node: %w", err)
		}
		cfg.RegisterNode = b && cfg.Kubeconfig != ""
	}
	if nodeLabels != "" {
		cfg.NodeLabels = map[string]string{}
		for _, kv := range strings.Split(nodeLabels, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("--node-labels: %q is not key=value", kv)
			}
			cfg.NodeLabels[k] = v
		}
	}
	registerTaints, err := ParseTaints(taints)
	if err != nil {
		return fmt.Errorf("--register-with-taints: %w", err)
	}
	cfg.RegisterWithTaints = registerTaints
	return nil
}

// validate checks what the flags say together, once they are parsed.
func (cfg *Config) validate() error {
	if cfg.BootstrapKubeconfig != "" && cfg.Kubeconfig == "" {
		return fmt.Errorf("--bootstrap-kubeconfig needs --kubeconfig: the path the kubeconfig of the issued certificate is written to")
	}
	if cfg.NodeName == "" {
		return fmt.Errorf("--node-name is required (the hostname is unknown)")
	}
	for name, d := range map[string]time.Duration{
		"resync-interval": cfg.ResyncInterval, "relist-interval": cfg.RelistInterval,
		"file-check-frequency": cfg.FileCheckFrequency, "crashloop-backoff-base": cfg.BackOffBase, "http-check-frequency": cfg.HTTPCheckFrequency,
		"admission-timeout": cfg.AdmissionTimeout, "container-gc-period": cfg.ContainerGCPeriod, "image-pull-backoff-max": cfg.ImagePullBackOffMax,
		"runtime-request-timeout": cfg.RuntimeRequestTimeout,
	} {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	// The kubelet's ValidateKubeletConfiguration, in whole milliseconds.
	if ms := cfg.MaxContainerRestartPeriod.Milliseconds(); ms < 1000 || ms > 300000 {
		return fmt.Errorf("--max-container-restart-period (got: %v seconds) must be set between 1s and 300s", cfg.MaxContainerRestartPeriod.Seconds())
	}
	if err := cfg.ImageGC.Validate(); err != nil {
		return err
	}
	if err := errors.Join(cfg.Listen.Validate()...); err != nil {
		return err
	}
	if cfg.AdmissionFailurePolicy != "Fail" && cfg.AdmissionFailurePolicy != "Ignore" {
		return fmt.Errorf("--admission-failure-policy must be Fail or Ignore, got %q", cfg.AdmissionFailurePolicy)
	}
	if cfg.NodeAPIAddr != "" {
		if (cfg.NodeAPITLSCertFile == "") != (cfg.NodeAPITLSKeyFile == "") {
			return fmt.Errorf("--node-api-tls-cert-file and --node-api-tls-private-key-file go together")
		}
		// Without an API server nothing can review tokens or decide
		// access: only client certificates remain, and they must have a CA.
		if cfg.Kubeconfig == "" && cfg.ClientCAFile == "" {
			return fmt.Errorf("--node-api-addr needs --kubeconfig (bearer tokens through TokenReview, access through SubjectAccessReview) or --client-ca-file (client certificates only; every verified client may do everything)")
		}
		if cfg.RotateServerCertificates && (cfg.Kubeconfig == "" || cfg.NodeAPITLSCertFile != "") {
			return fmt.Errorf("--rotate-server-certificates needs --kubeconfig (the signer is the API server's) and no --node-api-tls-cert-file")
		}
		if cfg.Kubeconfig == "" && cfg.AnonymousAuth {
			return fmt.Errorf("--anonymous-auth needs --kubeconfig: without SubjectAccessReview every anonymous request would be allowed")
		}
	}
	return nil
}

// Logger builds the process logger: JSON to stderr at the configured level.
func (c Config) Logger() (*zap.Logger, error) {
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(c.LogLevel)
	zc.Sampling = nil
	return zc.Build()
}

// DefaultRegisterWithTaints is splitlet's own taint (apiserver.Taint):
// pods land on a splitlet node only when they tolerate it.
const DefaultRegisterWithTaints = "splitlet.dev/agent=splitlet:NoSchedule"

// ParseTaints reads the kubelet's --register-with-taints format,
// comma-separated <key>[=<value>]:<effect> (pkg/util/taints ParseTaints),
// with the effects a Node accepts.
func ParseTaints(s string) ([]v1.Taint, error) {
	if s == "" {
		return nil, nil
	}
	var out []v1.Taint
	for _, spec := range strings.Split(s, ",") {
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want <key>=<value>:<effect>", spec)
		}
		key, value, _ := strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("%q: key: %s", spec, strings.Join(errs, "; "))
		}
		if value != "" {
			if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
				return nil, fmt.Errorf("%q: value: %s", spec, strings.Join(errs, "; "))
			}
		}
		switch e := v1.TaintEffect(effect); e {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
			out = append(out, v1.Taint{Key: key, Value: value, Effect: e})
		default:
			return nil, fmt.Errorf("%q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", spec, effect)
		}
	}
	return out, nil
}
