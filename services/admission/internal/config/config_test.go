package config

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParse(t *testing.T) {
	tests := []struct {
		desc string
		yaml string
		// wantErr lists substrings the error must contain; empty means
		// the file is valid.
		wantErr []string
		check   func(t *testing.T, c Config)
	}{
		{
			desc: "empty file takes the defaults",
			yaml: "",
			check: func(t *testing.T, c Config) {
				if c.Listen.Address != DefaultListen || c.LogLevel != "info" {
					t.Errorf("listen %q logLevel %q, want defaults", c.Listen.Address, c.LogLevel)
				}
				if c.Eviction.EvaluationInterval.Duration != DefaultEvaluationInterval ||
					c.Eviction.PressureTransitionPeriod.Duration != DefaultPressureTransitionPeriod {
					t.Errorf("eviction periods %+v, want defaults", c.Eviction)
				}
				if c.Eviction.Hard != nil {
					t.Errorf("eviction.hard = %v, want nil (nodeinfo's defaults)", c.Eviction.Hard)
				}
				if c.Profiling {
					t.Error("profiling on by default, want off")
				}
			},
		},
		{
			desc: "full file maps onto nodeinfo",
			yaml: `
listen: 0.0.0.0:9000
listenTokenFile: /etc/splitlet/admission.tokens
logLevel: debug
pluginsConfig: /etc/splitlet/plugins.yaml
gatewayEndpoint: unix:///run/splitlet/gateway.sock
node:
  name: node-a
  labels: {zone: a}
  taints:
  - {key: dedicated, value: infra, effect: NoSchedule}
  maxPods: 20
  capacity: {cpu: "4", example.com/gpu: "2"}
  allocatable: {memory: 2Gi}
  systemReserved: {cpu: 500m}
  kubeReserved: {memory: 256Mi}
eviction:
  hard: {memory.available: 200Mi, nodefs.available: "5%"}
  soft: {memory.available: 500Mi}
  softGracePeriod: {memory.available: 1m30s}
  minimumReclaim: {memory.available: 100Mi}
  maxPodGracePeriodSeconds: 30
  pressureTransitionPeriod: 1m
  evaluationInterval: 2s
  nodeFsRoot: /var/lib/splitlet
`,
			check: func(t *testing.T, c Config) {
				if c.Listen.Address != "0.0.0.0:9000" || c.Listen.TokenFile != "/etc/splitlet/admission.tokens" || c.LogLevel != "debug" || c.PluginsConfig != "/etc/splitlet/plugins.yaml" {
					t.Errorf("top level not decoded: %+v", c)
				}
				if c.Eviction.EvaluationInterval.Duration != 2*time.Second || c.Eviction.PressureTransitionPeriod.Duration != time.Minute {
					t.Errorf("eviction periods not decoded: %+v", c.Eviction)
				}
				nc, err := c.NodeinfoConfig()
				if err != nil {
					t.Fatal(err)
				}
				if nc.NodeName != "node-a" || nc.MaxPods != 20 || nc.Labels["zone"] != "a" {
					t.Errorf("node identity not mapped: %+v", nc)
				}
				if len(nc.Taints) != 1 || nc.Taints[0].Effect != v1.TaintEffectNoSchedule || nc.Taints[0].Value != "infra" {
					t.Errorf("taints = %+v", nc.Taints)
				}
				gpu := nc.Capacity["example.com/gpu"]
				if gpu.Cmp(resource.MustParse("2")) != 0 {
					t.Errorf("capacity gpu = %v, want 2", gpu.String())
				}
				cpu := nc.SystemReserved[v1.ResourceCPU]
				if cpu.MilliValue() != 500 {
					t.Errorf("systemReserved cpu = %v, want 500m", cpu.String())
				}
				if nc.EvictionHard["memory.available"] != "200Mi" {
					t.Errorf("hard thresholds not passed to nodeinfo: %v", nc.EvictionHard)
				}
			},
		},
		{desc: "unknown key", yaml: "listn: x:1", wantErr: []string{"listn"}},
		{desc: "profiling key", yaml: "profiling: true", check: func(t *testing.T, c Config) {
			if !c.Profiling {
				t.Error("profiling: true not decoded")
			}
		}},
		{desc: "profiling not a bool", yaml: "profiling: sometimes", wantErr: []string{"profiling"}},
		{desc: "bad listen", yaml: "listen: nocolon", wantErr: []string{"listen:"}},
		{desc: "TCP listen without a credential", yaml: "listen: 127.0.0.1:7444", wantErr: []string{"--listen-token-file"}},
		{desc: "bad log level", yaml: "logLevel: loud", wantErr: []string{"logLevel:"}},
		{desc: "bad node name", yaml: "node: {name: Node_A}", wantErr: []string{"node.name:"}},
		{desc: "bad label key", yaml: `node: {labels: {"a b": x}}`, wantErr: []string{`node.labels["a b"]`}},
		{
			desc:    "taint without key and with a bad effect",
			yaml:    "node: {taints: [{effect: Sometimes}]}",
			wantErr: []string{"node.taints[0].key", "node.taints[0].effect"},
		},
		{desc: "bad capacity quantity", yaml: "node: {capacity: {cpu: lots}}", wantErr: []string{`node.capacity["cpu"]`}},
		{desc: "negative reservation", yaml: "node: {kubeReserved: {memory: -1Gi}}", wantErr: []string{`node.kubeReserved["memory"]`}},
		{desc: "unknown signal", yaml: "eviction: {hard: {swap.available: 1Gi}}", wantErr: []string{`eviction.hard["swap.available"]`, "unknown signal"}},
		{desc: "percentage above 100", yaml: `eviction: {hard: {nodefs.available: "150%"}}`, wantErr: []string{`eviction.hard["nodefs.available"]`}},
		{desc: "garbage threshold", yaml: `eviction: {hard: {memory.available: "lots"}}`, wantErr: []string{`eviction.hard["memory.available"]`}},
		{
			desc:    "soft threshold without grace period",
			yaml:    "eviction: {soft: {memory.available: 1Gi}}",
			wantErr: []string{`eviction.soft["memory.available"]: needs eviction.softGracePeriod`},
		},
		{
			desc:    "grace period without soft threshold, and unparsable",
			yaml:    "eviction: {softGracePeriod: {pid.available: soon}}",
			wantErr: []string{`eviction.softGracePeriod["pid.available"]: "soon"`, "no soft threshold"},
		},
		{desc: "zero evaluation interval", yaml: "eviction: {evaluationInterval: 0s}", wantErr: []string{"eviction.evaluationInterval"}},
		{desc: "negative shutdown timeout", yaml: "shutdownTimeout: -1s", wantErr: []string{"shutdownTimeout"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				tc.check(t, c)
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tc.wantErr)
			}
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("error %v does not wrap ErrInvalidArgument", err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestLoadFlagsOverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admission.yaml")
	file := "listen: 127.0.0.1:9999\nlistenTokenFile: /t\nnode: {name: from-file}\npluginsConfig: /file/plugins.yaml\nlogLevel: warn\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc        string
		args        []string
		wantListen  string
		wantNode    string
		wantPlugins string
		wantLevel   string
	}{
		{
			desc:       "file alone; flag defaults do not override it",
			args:       []string{"--config", path},
			wantListen: "127.0.0.1:9999", wantNode: "from-file", wantPlugins: "/file/plugins.yaml", wantLevel: "warn",
		},
		{
			desc:       "flags win over the file",
			args:       []string{"--config", path, "--listen", "127.0.0.1:1", "--listen-token-file", "/other", "--node-name", "from-flag", "--plugins-config", "", "--log-level", "debug"},
			wantListen: "127.0.0.1:1", wantNode: "from-flag", wantPlugins: "", wantLevel: "debug",
		},
		{
			desc:       "no file: defaults and flags",
			args:       []string{"--node-name", "n1"},
			wantListen: DefaultListen, wantNode: "n1", wantLevel: "info",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := Load(tc.args, io.Discard)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Listen.Address != tc.wantListen || c.Node.Name != tc.wantNode || c.PluginsConfig != tc.wantPlugins || c.LogLevel != tc.wantLevel {
				t.Errorf("got listen %q node %q plugins %q level %q, want %q %q %q %q",
					c.Listen.Address, c.Node.Name, c.PluginsConfig, c.LogLevel, tc.wantListen, tc.wantNode, tc.wantPlugins, tc.wantLevel)
			}
		})
	}
}

// TestLoadProfiling checks --profiling against the file's profiling key:
// off unless one of them turns it on, and a flag that was given wins either
// way (a flag left out does not reset the file's true).
func TestLoadProfiling(t *testing.T) {
	dir := t.TempDir()
	on := filepath.Join(dir, "on.yaml")
	if err := os.WriteFile(on, []byte("profiling: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	off := filepath.Join(dir, "off.yaml")
	if err := os.WriteFile(off, []byte("logLevel: warn\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		args []string
		want bool
	}{
		{desc: "default off", args: nil, want: false},
		{desc: "flag turns it on", args: []string{"--profiling"}, want: true},
		{desc: "flag with an explicit true", args: []string{"--profiling=true"}, want: true},
		{desc: "file key turns it on", args: []string{"--config", on}, want: true},
		{desc: "file without the key stays off", args: []string{"--config", off}, want: false},
		{desc: "flag on over a file without the key", args: []string{"--config", off, "--profiling"}, want: true},
		{desc: "flag off overrides the file's true", args: []string{"--config", on, "--profiling=false"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := Load(tc.args, io.Discard)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Profiling != tc.want {
				t.Errorf("Profiling = %v, want %v", c.Profiling, tc.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("node: {maxPods: -3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc    string
		args    []string
		wantErr string
		wantIs  error
	}{
		{desc: "help", args: []string{"-h"}, wantIs: flag.ErrHelp},
		{desc: "missing file", args: []string{"--config", "/nonexistent/admission.yaml"}, wantErr: "--config"},
		{desc: "invalid file names file and field", args: []string{"--config", bad}, wantErr: "node.maxPods"},
		{desc: "bad flag value is validated too", args: []string{"--listen", "nope"}, wantErr: "listen:"},
		{desc: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Load(tc.args, io.Discard)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

// The example shipped beside the command must stay valid.
func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile("../../cmd/splitlet-admission/admission.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if c.Node.Name != "node-a" || c.Eviction.Soft["memory.available"] != "300Mi" {
		t.Errorf("example not decoded: %+v", c)
	}
}
