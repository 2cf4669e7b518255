package kubeletnode

import (
	"encoding/json"
	"os"

	"github.com/splitlet/splitlet/internal/stack"
)

// kubeletConfiguration is the part of the kubelet's
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration this package sets,
// under the same JSON names (k8s.io/kubelet/config/v1beta1 is not a
// dependency of this module). The kubelet decodes its config file strictly,
// so a misspelt field fails the start instead of being ignored. Fields left
// out keep the kubelet's defaults.
type kubeletConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
	CgroupDriver             string `json:"cgroupDriver"`
	CgroupsPerQOS            *bool  `json:"cgroupsPerQOS"`
	CgroupRoot               string `json:"cgroupRoot"`
	FailCgroupV1             *bool  `json:"failCgroupV1"`
	FailSwapOn               *bool  `json:"failSwapOn"`
	ProtectKernelDefaults    bool   `json:"protectKernelDefaults"`

	Address            string `json:"address"`
	Port               int    `json:"port"`
	ReadOnlyPort       int    `json:"readOnlyPort"`
	HealthzBindAddress string `json:"healthzBindAddress"`
	HealthzPort        *int   `json:"healthzPort"`
	TLSCertFile        string `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile  string `json:"tlsPrivateKeyFile,omitempty"`

	Authentication authentication `json:"authentication"`
	Authorization  authorization  `json:"authorization"`

	PodLogsDir    string   `json:"podLogsDir"`
	ClusterDomain string   `json:"clusterDomain"`
	ClusterDNS    []string `json:"clusterDNS,omitempty"`

	EvictionHard                map[string]string `json:"evictionHard"`
	ImageGCHighThresholdPercent *int              `json:"imageGCHighThresholdPercent"`
	ImageGCLowThresholdPercent  *int              `json:"imageGCLowThresholdPercent"`
}

type authentication struct {
	X509      x509Authentication `json:"x509"`
	Webhook   enabled            `json:"webhook"`
	Anonymous enabled            `json:"anonymous"`
}

type x509Authentication struct {
	ClientCAFile string `json:"clientCAFile"`
}

type enabled struct {
	Enabled bool `json:"enabled"`
}

type authorization struct {
	Mode string `json:"mode"`
}

// newKubeletConfiguration is the configuration for this machine: cgroup v1
// without systemd, no swap, a disk shared with other work, and a control
// plane whose API server checks the kubelet's serving certificate against
// the cluster CA and authenticates to it with a client certificate.
func newKubeletConfiguration(cfg Config, l layout) kubeletConfiguration {
	yes, no := true, false
	healthz := cfg.HealthzPort
	gcHigh, gcLow := 100, 99
	return kubeletConfiguration{
		APIVersion: "kubelet.config.k8s.io/v1beta1",
		Kind:       "KubeletConfiguration",

		ContainerRuntimeEndpoint: cfg.RuntimeEndpoint,
		// No systemd here; containerd's runc runs with SystemdCgroup false.
		CgroupDriver: "cgroupfs",
		// The kubelet's pod and QoS cgroups, as on a real node, but under a
		// root of the node's own: the kubelet kills and removes every pod
		// cgroup under its kubepods that is not one of its pods
		// (cleanupOrphanedPodCgroups), and splitlet names its pods' cgroups
		// /kubepods/... The root must exist before the kubelet starts.
		CgroupsPerQOS: &yes,
		CgroupRoot:    cfg.CgroupRoot,
		// This machine has cgroup v1, which the kubelet refuses unless
		// failCgroupV1 is false (its default is true; cgroup v1 is
		// deprecated, KEP-5573).
		FailCgroupV1: &no,
		// Whether or not the machine has swap, the kubelet must not refuse
		// to start over it: a test node is not a production node.
		FailSwapOn: &no,
		// The kubelet sets vm.overcommit_memory=1, vm.panic_on_oom=0,
		// kernel.panic=10, kernel.panic_on_oops=1 and the root keyring
		// limits itself (Node.Stop puts the old values back); with true it
		// refuses to start unless they were set beforehand, and on this
		// machine three of them differ.
		ProtectKernelDefaults: false,

		// The API server reaches the kubelet at the Node's InternalIP (its
		// --kubelet-preferred-address-types) on status.daemonEndpoints'
		// port, which is this one.
		Address:            cfg.NodeIP,
		Port:               cfg.Port,
		ReadOnlyPort:       0, // no unauthenticated API
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        &healthz,
		TLSCertFile:        cfg.TLSCertFile,
		TLSPrivateKeyFile:  cfg.TLSKeyFile,

		// As kubeadm configures it: the API server's kubelet-client
		// certificate is verified against the cluster CA, bearer tokens
		// through TokenReview, and every request is authorized by a
		// SubjectAccessReview made with the node's own credential.
		Authentication: authentication{
			X509:    x509Authentication{ClientCAFile: cfg.ClientCAFile},
			Webhook: enabled{Enabled: true},
		},
		Authorization: authorization{Mode: "Webhook"},

		// Default /var/log/pods: out of the machine's directories.
		PodLogsDir:    l.podLogs,
		ClusterDomain: cfg.ClusterDomain,
		ClusterDNS:    cfg.ClusterDNS,

		// The same thresholds as splitlet's in tests (a signal left out
		// would be off: mergeDefaultEvictionSettings is false).
		EvictionHard: stack.EvictionHard,
		// 100 turns image garbage collection off: the images are imported
		// from files (hack/images.sh) and no registry could give a removed
		// one back.
		ImageGCHighThresholdPercent: &gcHigh,
		ImageGCLowThresholdPercent:  &gcLow,
	}
}

func (k kubeletConfiguration) write(path string) error {
	raw, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	// JSON is YAML: the kubelet reads either.
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
