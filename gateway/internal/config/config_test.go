package config

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/splitlet/splitlet/gateway/policy"
)

func TestParse(t *testing.T) {
	tests := []struct {
		desc    string
		args    []string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{desc: "defaults", args: nil, check: func(t *testing.T, c Config) {
			s := c.Server
			if s.Backend != "fake" || s.RuntimeEndpoint != DefaultRuntimeEndpoint || s.SocketPath != DefaultSocket {
				t.Errorf("backend/endpoint/socket = %q %q %q", s.Backend, s.RuntimeEndpoint, s.SocketPath)
			}
			if s.SocketMode != 0o660 || s.MetricsAddr != DefaultMetricsAddr || s.DefaultTimeout != 2*time.Minute {
				t.Errorf("mode/metrics/timeout = %#o %q %v", s.SocketMode, s.MetricsAddr, s.DefaultTimeout)
			}
			if !reflect.DeepEqual(s.Policy, policy.DefaultConfig()) {
				t.Errorf("policy = %+v, want the policy package's default", s.Policy)
			}
			if c.LogLevel != zapcore.InfoLevel || c.LogFormat != "json" {
				t.Errorf("log = %v %q", c.LogLevel, c.LogFormat)
			}
			if s.Profiling {
				t.Error("profiling on by default")
			}
		}},
		{desc: "profiling", args: []string{"--profiling"}, check: func(t *testing.T, c Config) {
			if !c.Server.Profiling || c.Server.MetricsAddr != DefaultMetricsAddr {
				t.Errorf("profiling %v on %q, want true on %q", c.Server.Profiling, c.Server.MetricsAddr, DefaultMetricsAddr)
			}
		}},
		{desc: "capabilities replace the baseline, comma-separated or repeated", args: []string{"--allowed-capability=NET_ADMIN, SYS_TIME", "--allowed-capability=CHOWN"},
			check: func(t *testing.T, c Config) {
				if want := []string{"NET_ADMIN", "SYS_TIME", "CHOWN"}; !reflect.DeepEqual(c.Server.Policy.AllowedCapabilities, want) {
					t.Errorf("capabilities = %v, want %v", c.Server.Policy.AllowedCapabilities, want)
				}
			}},
		{desc: "critest-style allow everything", args: []string{"--backend=cri", "--socket=/tmp/gw.sock",
			"--allow-host-network", "--allow-privileged", "--allow-host-pid", "--allow-host-ipc",
			"--allowed-host-path=/", "--allowed-capability=*", `--metrics-addr=`}, check: func(t *testing.T, c Config) {
			want := policy.Config{AllowPrivileged: true, AllowHostNetwork: true, AllowHostPID: true,
				AllowHostIPC: true, AllowedHostPathPrefixes: []string{"/"}, AllowedCapabilities: []string{"*"}}
			if !reflect.DeepEqual(c.Server.Policy, want) {
				t.Errorf("policy = %+v, want %+v", c.Server.Policy, want)
			}
			if c.Server.MetricsAddr != "" || c.Server.Backend != "cri" {
				t.Errorf("metrics %q backend %q", c.Server.MetricsAddr, c.Server.Backend)
			}
		}},
		{desc: "repeated host paths replace the default", args: []string{"--allowed-host-path=/data", "--allowed-host-path=/var/log"},
			check: func(t *testing.T, c Config) {
				if got := c.Server.Policy.AllowedHostPathPrefixes; !reflect.DeepEqual(got, []string{"/data", "/var/log"}) {
					t.Errorf("prefixes = %v", got)
				}
			}},
		{desc: "host network can be denied", args: []string{"--allow-host-network=false"}, check: func(t *testing.T, c Config) {
			if c.Server.Policy.AllowHostNetwork {
				t.Error("host network still allowed")
			}
		}},
		{desc: "socket mode is octal", args: []string{"--socket-mode=0600", "--socket-group=splitlet"}, check: func(t *testing.T, c Config) {
			if c.Server.SocketMode != 0o600 || c.Server.SocketGroup != "splitlet" {
				t.Errorf("mode %#o group %q", c.Server.SocketMode, c.Server.SocketGroup)
			}
		}},
		{desc: "preload list is split and trimmed", args: []string{"--fake-preload-images=busybox, pause:3.9,,"}, check: func(t *testing.T, c Config) {
			if got := c.Server.FakePreloadImages; !reflect.DeepEqual(got, []string{"busybox", "pause:3.9"}) {
				t.Errorf("images = %v", got)
			}
		}},
		{desc: "log flags", args: []string{"--log-level=debug", "--log-format=console", "--default-timeout=0"}, check: func(t *testing.T, c Config) {
			if c.LogLevel != zapcore.DebugLevel || c.LogFormat != "console" || c.Server.DefaultTimeout != 0 {
				t.Errorf("level %v format %q timeout %v", c.LogLevel, c.LogFormat, c.Server.DefaultTimeout)
			}
		}},
		{desc: "bad socket mode", args: []string{"--socket-mode=0999"}, wantErr: "not an octal mode"},
		{desc: "setuid bit refused", args: []string{"--socket-mode=4755"}, wantErr: "bits beyond"},
		{desc: "unknown backend", args: []string{"--backend=docker"}, wantErr: `--backend "docker"`},
		{desc: "bad log level", args: []string{"--log-level=loud"}, wantErr: "--log-level"},
		{desc: "bad log format", args: []string{"--log-format=xml"}, wantErr: "--log-format"},
		{desc: "TCP without TLS files", args: []string{"--listen-tcp=127.0.0.1:0"}, wantErr: "mutual TLS is required"},
		{desc: "preload with the cri backend", args: []string{"--backend=cri", "--fake-preload-images=a"}, wantErr: "needs --backend=fake"},
		{desc: "the fake on the systemd cgroup driver", args: []string{"--fake-cgroup-driver=systemd"}, check: func(t *testing.T, c Config) {
			if !c.Server.FakeSystemdCgroups {
				t.Error("FakeSystemdCgroups not set")
			}
		}},
		{desc: "a cgroup driver for the cri backend", args: []string{"--backend=cri", "--fake-cgroup-driver=systemd"}, wantErr: "--fake-cgroup-driver needs --backend=fake"},
		{desc: "an unknown fake cgroup driver", args: []string{"--fake-cgroup-driver=v2"}, wantErr: `--fake-cgroup-driver "v2"`},
		{desc: "profiling without a metrics server", args: []string{"--profiling", "--metrics-addr="}, wantErr: "--profiling needs --metrics-addr"},
		{desc: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments: extra"},
		{desc: "no socket and no TCP", args: []string{"--socket="}, wantErr: "a unix socket path or a TCP address is required"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := Parse(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) = %v, want an error containing %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.args, err)
			}
			tc.check(t, c)
		})
	}
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out strings.Builder
	_, err := Parse([]string{"-h"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
	for _, name := range []string{"backend", "runtime-endpoint", "socket", "socket-mode", "socket-group",
		"listen-tcp", "tls-cert", "tls-key", "tls-client-ca", "metrics-addr", "profiling", "default-timeout",
		"allow-privileged", "allow-host-network", "allow-host-pid", "allow-host-ipc", "allowed-host-path",
		"log-level", "log-format", "fake-preload-images", "fake-cgroup-driver", "version"} {
		if !strings.Contains(out.String(), "-"+name) {
			t.Errorf("help does not mention -%s", name)
		}
	}
}

func TestLogger(t *testing.T) {
	c, err := Parse([]string{"--log-level=warn"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log, err := c.Logger()
	if err != nil {
		t.Fatal(err)
	}
	if log.Core().Enabled(zapcore.InfoLevel) || !log.Core().Enabled(zapcore.WarnLevel) {
		t.Error("logger level does not follow --log-level=warn")
	}
}
