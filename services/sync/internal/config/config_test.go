package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		args    []string
		check   func(Config) bool
		wantErr string
	}{
		{desc: "defaults", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.Listen.Address == DefaultListen && c.RuntimeEndpoint == DefaultRuntimeEndpoint && c.StateDir == DefaultStateDir &&
				c.ResyncInterval == DefaultResyncInterval && c.RelistInterval == time.Second && c.BackOffBase == 10*time.Second &&
				c.ManifestDir == ""
		}},
		{desc: "hidden back-off flag is accepted", args: []string{"--crashloop-backoff-base=300ms"}, check: func(c Config) bool {
			return c.BackOffBase == 300*time.Millisecond
		}},
		{desc: "back-off caps default to the kubelet's 5 min", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.MaxContainerRestartPeriod == 300*time.Second && c.ImagePullBackOffMax == 300*time.Second
		}},
		{desc: "max-container-restart-period", args: []string{"--max-container-restart-period=1s"}, check: func(c Config) bool {
			return c.MaxContainerRestartPeriod == time.Second && c.ImagePullBackOffMax == 300*time.Second
		}},
		{desc: "max-container-restart-period below 1s", args: []string{"--max-container-restart-period=999ms"},
			wantErr: "--max-container-restart-period (got: 0.999 seconds) must be set between 1s and 300s"},
		{desc: "max-container-restart-period above 300s", args: []string{"--max-container-restart-period=301s"},
			wantErr: "--max-container-restart-period (got: 301 seconds) must be set between 1s and 300s"},
		{desc: "node IPs split", args: []string{"--node-ip=10.0.0.1,fd00::1"}, check: func(c Config) bool {
			return len(c.NodeIPs) == 2 && c.NodeIPs[1] == "fd00::1"
		}},
		{desc: "admission off by default, fail-closed", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.Admission.Endpoint == "" && c.AdmissionFailurePolicy == "Fail" && c.AdmissionTimeout == DefaultAdmissionTimeout
		}},
		{desc: "admission flags", args: []string{"--admission-endpoint=127.0.0.1:7444", "--admission-timeout=500ms", "--admission-failure-policy=Ignore", "--admission-token-file=/t"}, check: func(c Config) bool {
			return c.Admission.Endpoint == "127.0.0.1:7444" && c.AdmissionTimeout == 500*time.Millisecond && c.AdmissionFailurePolicy == "Ignore" &&
				c.Admission.TokenFile == "/t"
		}},
		{desc: "a TCP listener with a token", args: []string{"--listen=127.0.0.1:7443", "--listen-token-file=/t"}, check: func(c Config) bool {
			return c.Listen.Address == "127.0.0.1:7443" && c.Listen.TokenFile == "/t"
		}},
		{desc: "a TCP listener without a credential", args: []string{"--listen=127.0.0.1:7443"}, wantErr: "--listen-token-file"},
		{desc: "API server source off by default", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.Kubeconfig == "" && !c.RegisterNode
		}},
		{desc: "kubeconfig turns node registration on", args: []string{"--kubeconfig=/k", "--node-labels=a=b,c="}, check: func(c Config) bool {
			return c.Kubeconfig == "/k" && c.RegisterNode && c.NodeLabels["a"] == "b" && len(c.NodeLabels) == 2
		}},
		{desc: "splitlet's taint by default", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return len(c.RegisterWithTaints) == 1 && c.RegisterWithTaints[0] == v1.Taint{Key: "splitlet.dev/agent", Value: "splitlet", Effect: v1.TaintEffectNoSchedule}
		}},
		{desc: "no taints", args: []string{"--register-with-taints="}, check: func(c Config) bool {
			return len(c.RegisterWithTaints) == 0
		}},
		{desc: "taints in the kubelet's format", args: []string{"--register-with-taints=a=b:NoExecute,example.com/c:PreferNoSchedule"}, check: func(c Config) bool {
			return len(c.RegisterWithTaints) == 2 && c.RegisterWithTaints[1] == v1.Taint{Key: "example.com/c", Effect: v1.TaintEffectPreferNoSchedule}
		}},
		{desc: "register-node=false with kubeconfig", args: []string{"--kubeconfig=/k", "--register-node=false"}, check: func(c Config) bool {
			return !c.RegisterNode
		}},
		{desc: "register-node without kubeconfig stays off", args: []string{"--register-node=true"}, check: func(c Config) bool {
			return !c.RegisterNode
		}},
		{desc: "cluster DNS off by default", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return len(c.ClusterDNS) == 0 && c.ClusterDomain == ""
		}},
		{desc: "cluster DNS and domain", args: []string{"--cluster-dns=10.96.0.10,fd00::a", "--cluster-domain=cluster.local"}, check: func(c Config) bool {
			return len(c.ClusterDNS) == 2 && c.ClusterDNS[0] == "10.96.0.10" && c.ClusterDNS[1] == "fd00::a" && c.ClusterDomain == "cluster.local"
		}},
		{desc: "cgroup root defaults to /sys/fs/cgroup, empty turns cleanup off", args: []string{"--cgroup-root="}, check: func(c Config) bool {
			d, _ := Parse([]string{"--node-name=n"}, &bytes.Buffer{})
			return c.CgroupRoot == "" && d.CgroupRoot == "/sys/fs/cgroup"
		}},
		{desc: "manifest URL with headers in the kubelet's format", args: []string{"--manifest-url=http://m/pods", "--manifest-url-header=a:hello,b:again", "--manifest-url-header=b:beautiful", "--http-check-frequency=5s"}, check: func(c Config) bool {
			b := c.ManifestURLHeader.Values("B")
			return c.ManifestURL == "http://m/pods" && c.ManifestURLHeader.Get("A") == "hello" &&
				len(b) == 2 && b[0] == "again" && b[1] == "beautiful" && c.HTTPCheckFrequency == 5*time.Second
		}},
		{desc: "HTTP source off by default, 20 s period", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.ManifestURL == "" && c.ManifestURLHeader == nil && c.HTTPCheckFrequency == 20*time.Second
		}},
		{desc: "no unsafe sysctls by default", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.AllowedUnsafeSysctls == nil
		}},
		{desc: "unsafe sysctls in the kubelet's format", args: []string{"--allowed-unsafe-sysctls=kernel.msg*,net.core.somaxconn"}, check: func(c Config) bool {
			return len(c.AllowedUnsafeSysctls) == 2 && c.AllowedUnsafeSysctls[0] == "kernel.msg*" && c.AllowedUnsafeSysctls[1] == "net.core.somaxconn"
		}},
		{desc: "an unsafe sysctl not namespaced", args: []string{"--allowed-unsafe-sysctls=net.*,vm.swappiness"}, wantErr: `--allowed-unsafe-sysctls: sysctl pattern "vm.swappiness"`},
		{desc: "bad manifest URL header", args: []string{"--manifest-url-header=novalue"}, wantErr: `"novalue" is not key:value`},
		{desc: "cluster DNS not an IP", args: []string{"--cluster-dns=kube-dns"}, wantErr: `--cluster-dns: "kube-dns" is not an IP address`},
		{desc: "taint without effect", args: []string{"--register-with-taints=a=b"}, wantErr: "--register-with-taints"},
		{desc: "taint with unknown effect", args: []string{"--register-with-taints=a=b:Never"}, wantErr: "--register-with-taints"},
		{desc: "taint with bad key", args: []string{"--register-with-taints=-a:NoSchedule"}, wantErr: "--register-with-taints"},
		{desc: "bad node label", args: []string{"--node-labels=nokey"}, wantErr: "--node-labels"},
		{desc: "bad admission failure policy", args: []string{"--admission-failure-policy=fail"}, wantErr: "--admission-failure-policy must be Fail or Ignore"},
		{desc: "zero admission timeout", args: []string{"--admission-timeout=0s"}, wantErr: "--admission-timeout must be positive"},
		{desc: "bad log level", args: []string{"--log-level=loud"}, wantErr: "--log-level"},
		{desc: "zero resync", args: []string{"--resync-interval=0s"}, wantErr: "--resync-interval must be positive"},
		{desc: "node API off by default, anonymous refused", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.NodeAPIAddr == "" && !c.AnonymousAuth && c.ClientCAFile == ""
		}},
		{desc: "CFS quotas with a 100ms period by default", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.CPUCFSQuota && c.CPUCFSQuotaPeriod == 100*time.Millisecond && c.FailSwapOn
		}},
		{desc: "CFS quotas off, another period, swap allowed", args: []string{"--cpu-cfs-quota=false", "--cpu-cfs-quota-period=1s", "--fail-swap-on=false"}, check: func(c Config) bool {
			return !c.CPUCFSQuota && c.CPUCFSQuotaPeriod == time.Second && !c.FailSwapOn
		}},
		{desc: "cgroupfs unless the runtime says otherwise", args: []string{"--node-name=n"}, check: func(c Config) bool { return c.CgroupDriver == "cgroupfs" }},
		{desc: "the systemd cgroup driver", args: []string{"--cgroup-driver=systemd"}, check: func(c Config) bool { return c.CgroupDriver == "systemd" }},
		{desc: "an unknown cgroup driver", args: []string{"--cgroup-driver=cgroupv2"}, wantErr: `--cgroup-driver "cgroupv2": want cgroupfs or systemd`},
		{desc: "NoSwap by default", args: []string{"--node-name=n"}, check: func(c Config) bool { return c.MemorySwapBehavior == "NoSwap" }},
		{desc: "LimitedSwap", args: []string{"--memory-swap-behavior=LimitedSwap"}, check: func(c Config) bool { return c.MemorySwapBehavior == "LimitedSwap" }},
		{desc: "an unknown swap behavior", args: []string{"--memory-swap-behavior=UnlimitedSwap"}, wantErr: `memorySwap.swapBehavior (--memory-swap-behavior) "UnlimitedSwap" must be one of`},
		{desc: "a CFS period over 1s", args: []string{"--cpu-cfs-quota-period=1001ms"}, wantErr: "cpuCFSQuotaPeriod (--cpu-cfs-quota-period) 1.001s must be between 1ms and 1sec, inclusive"},
		{desc: "a CFS period under 1ms", args: []string{"--cpu-cfs-quota-period=999us"}, wantErr: "must be between 1ms and 1sec"},
		{desc: "/logs/ serves /var/log/ without queries by default", args: []string{"--node-name=n"}, check: func(c Config) bool {
			return c.SystemLogDir == "/var/log/" && !c.SystemLogQuery
		}},
		{desc: "/logs/ with queries from another directory", args: []string{"--system-log-dir=/host/var/log", "--enable-system-log-query"}, check: func(c Config) bool {
			return c.SystemLogDir == "/host/var/log" && c.SystemLogQuery
		}},
		{desc: "/logs/ off", args: []string{"--enable-system-log-handler=false"}, check: func(c Config) bool {
			return c.SystemLogDir == ""
		}},
		{desc: "/logs/ on with no directory", args: []string{"--system-log-dir="}, wantErr: "--system-log-dir: empty"},
		{desc: "node API with an API server", args: []string{"--node-api-addr=:10250", "--kubeconfig=/k", "--client-ca-file=/ca.crt", "--node-api-tls-cert-file=/c", "--node-api-tls-private-key-file=/k"}, check: func(c Config) bool {
			return c.NodeAPIAddr == ":10250" && c.ClientCAFile == "/ca.crt" && c.NodeAPITLSCertFile == "/c" && c.NodeAPITLSKeyFile == "/k"
		}},
		{desc: "node API with client certificates only", args: []string{"--node-api-addr=127.0.0.1:10250", "--client-ca-file=/ca.crt"}, check: func(c Config) bool {
			return c.NodeAPIAddr == "127.0.0.1:10250" && c.Kubeconfig == ""
		}},
		{desc: "node API with no way to authenticate", args: []string{"--node-api-addr=:10250"}, wantErr: "--node-api-addr needs --kubeconfig"},
		{desc: "node API anonymous without an API server", args: []string{"--node-api-addr=:10250", "--client-ca-file=/ca.crt", "--anonymous-auth"}, wantErr: "--anonymous-auth needs --kubeconfig"},
		{desc: "node API certificate without its key", args: []string{"--node-api-addr=:10250", "--kubeconfig=/k", "--node-api-tls-cert-file=/c"}, wantErr: "go together"},
		{desc: "pod-resources socket under the state dir by default", args: []string{"--state-dir=/s"}, check: func(c Config) bool {
			return c.PodResourcesSocket == "/s/pod-resources/kubelet.sock"
		}},
		{desc: "pod-resources socket moved", args: []string{"--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"}, check: func(c Config) bool {
			return c.PodResourcesSocket == "/var/lib/kubelet/pod-resources/kubelet.sock"
		}},
		{desc: "pod-resources socket off", args: []string{"--pod-resources-socket="}, check: func(c Config) bool {
			return c.PodResourcesSocket == ""
		}},
		{desc: "flags for /flagz: every flag, effective values, headers classified", args: []string{"--state-dir=/s", "--manifest-url-header=Authorization:Bearer secret"}, check: func(c Config) bool {
			return c.Flags["state-dir"] == "/s" && c.Flags["cert-dir"] == "/s/pki" && c.Flags["node-api-addr"] == "" &&
				c.Flags["resync-interval"] == "1m0s" && c.Flags["crashloop-backoff-base"] == "10s" &&
				c.Flags["manifest-url-header"] == "CLASSIFIED" && !strings.Contains(fmt.Sprint(c.Flags), "secret")
		}},
		{desc: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg, err := Parse(tc.args, &bytes.Buffer{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("Parse(%v) = %+v", tc.args, cfg)
			}
		})
	}
}

func TestUsageHidesTestFlags(t *testing.T) {
	var out bytes.Buffer
	if _, err := Parse([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(out.String(), "--manifest-dir") || strings.Contains(out.String(), "crashloop-backoff") {
		t.Errorf("usage shows manifest-dir: %v, hides crashloop-backoff: %v",
			strings.Contains(out.String(), "--manifest-dir"), !strings.Contains(out.String(), "crashloop-backoff"))
	}
}
