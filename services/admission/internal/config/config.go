// Package config turns splitlet-admission's configuration file and command
// line into the settings the process runs with. The file (YAML) holds
// everything; the few flags worth setting per invocation (--listen,
// --node-name, --plugins-config, --log-level, --profiling) override it.
//
//	cfg, err := config.Load(os.Args[1:], os.Stderr)
//	log, err := cfg.Logger()
//	err = server.Run(ctx, cfg)
//
// Every validation error names the field it is about, spelled as in the file
// (for example `eviction.hard["memory.available"]`), so a bad file is fixed
// without reading code.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/splitlet/splitlet/internal/apiauth"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/admission/eviction"
	"github.com/splitlet/splitlet/services/admission/nodeinfo"
)

// Defaults worth naming.
const (
	// DefaultListen is a unix socket only its owner and group may use:
	// admission answers sync, which runs on the same node, and its GetNode
	// and WatchEvictions describe the node's pods. A TCP address needs a
	// token or mutual TLS (internal/apiauth); the docs use port 7444, free
	// of the well-known node ports (kubelet 10250, node_exporter 9100, the
	// gateway's metrics 9101).
	DefaultListen = "unix:///run/splitlet/admission.sock"
	// DefaultEvaluationInterval is the kubelet's eviction monitoring
	// period (evictionMonitoringPeriod, 10s).
	DefaultEvaluationInterval = 10 * time.Second
	// DefaultPressureTransitionPeriod is the kubelet's
	// --eviction-pressure-transition-period default.
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// DefaultShutdownTimeout bounds graceful shutdown on SIGTERM: in-flight
	// Admit calls are short, WatchEvictions streams are cut.
	DefaultShutdownTimeout = 5 * time.Second
)

// Config is the whole configuration of splitlet-admission. Field names are
// the file's keys.
type Config struct {
	// Listen is where AdmissionService (gRPC, gRPC-Web and Connect on one
	// address, HTTP/2 in cleartext or over TLS), gRPC health and /metrics
	// are served, and how callers of the service authenticate: the keys
	// listen, listenTokenFile, listenTLSCertFile, listenTLSPrivateKeyFile
	// and listenClientCAFile, and the flags of the same names.
	apiauth.Listen `json:",inline"`
	// LogLevel is the least severe level logged: debug, info, warn, error.
	LogLevel string `json:"logLevel,omitempty"`
	// Node describes the node pods are admitted against.
	Node NodeConfig `json:"node,omitempty"`
	// Eviction configures the eviction manager.
	Eviction EvictionConfig `json:"eviction,omitempty"`
	// PluginsConfig is the path of the admission plugin chain file (see
	// internal/pluginhost); empty runs the built-in handlers only.
	PluginsConfig string `json:"pluginsConfig,omitempty"`
	// GatewayEndpoint is the runtime gateway's CRI endpoint (unix socket
	// path or unix:// URL) that pod stats are read from for eviction
	// ranking; empty ranks without usage.
	GatewayEndpoint string `json:"gatewayEndpoint,omitempty"`
	// Tracing is set by the --tracing-* flags only (internal/tracing).
	Tracing tracing.Config `json:"-"`
	// ShutdownTimeout bounds graceful shutdown.
	ShutdownTimeout metav1.Duration `json:"shutdownTimeout,omitempty"`
	// Profiling serves Go's pprof handlers under /debug/pprof/ on Listen,
	// beside /metrics (the kubelet's enableProfilingHandler). Off by
	// default, unlike the kubelet's: like /metrics it needs no credential
	// (only the AdmissionService does), and a CPU profile or trace is work
	// any caller could start.
	Profiling bool `json:"profiling,omitempty"`
}

// NodeConfig maps onto nodeinfo.Config; see there for each field's meaning.
// Resource maps take quantities as strings ("500m", "1Gi").
type NodeConfig struct {
	// Name is the node's name; empty means the hostname.
	Name     string            `json:"name,omitempty"`
	Hostname string            `json:"hostname,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Taints   []v1.Taint        `json:"taints,omitempty"`
	// RootDir is the directory on the filesystem holding pods' ephemeral
	// storage; its size is the ephemeral-storage capacity.
	RootDir        string            `json:"rootDir,omitempty"`
	MaxPods        int64             `json:"maxPods,omitempty"`
	Capacity       map[string]string `json:"capacity,omitempty"`
	Allocatable    map[string]string `json:"allocatable,omitempty"`
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty"`
	// SupplementalGroupsPolicy, when set, declares whether the runtime
	// honours supplementalGroupsPolicy Strict. Absent, admission asks the
	// runtime behind gatewayEndpoint (CRI Status features) every 5 s, as
	// the kubelet's updateRuntimeUp does; without gatewayEndpoint it is
	// false.
	SupplementalGroupsPolicy *bool `json:"supplementalGroupsPolicy,omitempty"`
}

// EvictionConfig holds the kubelet's eviction settings, keyed by signal as
// its --eviction-hard, --eviction-soft and --eviction-soft-grace-period flags.
type EvictionConfig struct {
	// Hard thresholds: "memory.available": "100Mi" or "10%". Absent means
	// the kubelet's defaults (nodeinfo.DefaultEvictionHard); an empty map
	// means none. They also reserve capacity from allocatable.
	Hard map[string]string `json:"hard,omitempty"`
	// Soft thresholds, same form; each needs a SoftGracePeriod.
	Soft map[string]string `json:"soft,omitempty"`
	// SoftGracePeriod per signal: how long a soft threshold must hold
	// before it evicts ("1m30s").
	SoftGracePeriod map[string]string `json:"softGracePeriod,omitempty"`
	// MinimumReclaim per signal: how much beyond the threshold an eviction
	// must free ("500Mi" or "5%").
	MinimumReclaim map[string]string `json:"minimumReclaim,omitempty"`
	// MaxPodGracePeriodSeconds caps the grace period of pods evicted for
	// a soft threshold.
	MaxPodGracePeriodSeconds int64 `json:"maxPodGracePeriodSeconds,omitempty"`
	// PressureTransitionPeriod is how long a pressure condition stays after
	// its thresholds stop being met; 0 means the default, 5m.
	PressureTransitionPeriod metav1.Duration `json:"pressureTransitionPeriod,omitempty"`
	// EvaluationInterval is how often signals are observed.
	EvaluationInterval metav1.Duration `json:"evaluationInterval,omitempty"`
	// NodeFsRoot and ImageFsRoot are directories on the filesystems
	// nodefs.* and imagefs.* signals measure; empty means node.rootDir and
	// nodefs respectively.
	NodeFsRoot  string `json:"nodeFsRoot,omitempty"`
	ImageFsRoot string `json:"imageFsRoot,omitempty"`
}

// ErrInvalid is wrapped by every validation error, so callers tell a bad
// configuration (exit status 2) from a failure to run.
var ErrInvalid = errdefs.ErrInvalidArgument

// Load reads the configuration: defaults, then the --config file when given,
// then flags that were set. args excludes the program name; usage and
// flag errors go to output. -h yields flag.ErrHelp.
func Load(args []string, output io.Writer) (Config, error) {
	fs := flag.NewFlagSet("splitlet-admission", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprintf(output, "Usage: splitlet-admission [flags]\n\n"+
			"Serves splitlet's AdmissionService: the kubelet's pod admission (eviction,\n"+
			"predicates, critical-pod preemption, plugins) and the eviction stream.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	path := fs.String("config", "", "YAML configuration file; flags below override its fields")
	listen := apiauth.Listen{Address: DefaultListen}
	listen.AddFlags(fs, "address serving AdmissionService (gRPC and Connect), gRPC health and /metrics")
	nodeName := fs.String("node-name", "", "the node's name and kubernetes.io/hostname label, as sync's --node-name (node.name); default: the hostname")
	plugins := fs.String("plugins-config", "", "admission plugin chain file (pluginsConfig); empty: built-in handlers only")
	logLevel := fs.String("log-level", "info", "least severe log level written: debug, info, warn or error")
	profiling := fs.Bool("profiling", false, "serve Go's pprof profiles under /debug/pprof/ on the --listen address, beside /metrics (profiling)")
	var tc tracing.Config
	tc.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("%w: unexpected arguments: %s", ErrInvalid, strings.Join(fs.Args(), " "))
	}

	cfg := Default()
	if *path != "" {
		data, err := os.ReadFile(*path)
		if err != nil {
			return Config{}, fmt.Errorf("--config: %w", err)
		}
		if cfg, err = Parse(data); err != nil {
			return Config{}, fmt.Errorf("--config %s: %w", *path, err)
		}
	}
	// Only flags given on the command line override the file, so a file's
	// listen address is not silently replaced by the flag's default.
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "listen":
			cfg.Listen.Address = listen.Address
		case "listen-token-file":
			cfg.Listen.TokenFile = listen.TokenFile
		case "listen-tls-cert-file":
			cfg.Listen.TLSCertFile = listen.TLSCertFile
		case "listen-tls-private-key-file":
			cfg.Listen.TLSKeyFile = listen.TLSKeyFile
		case "listen-client-ca-file":
			cfg.Listen.ClientCAFile = listen.ClientCAFile
		case "node-name":
			cfg.Node.Name = *nodeName
		case "plugins-config":
			cfg.PluginsConfig = *plugins
		case "log-level":
			cfg.LogLevel = *logLevel
		case "profiling":
			// Set either way, so --profiling=false turns off a
			// file's profiling: true.
			cfg.Profiling = *profiling
		}
	})
	cfg.Tracing = tc
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Default returns the configuration used when the file leaves a field out.
func Default() Config {
	return Config{
		Listen:          apiauth.Listen{Address: DefaultListen},
		LogLevel:        "info",
		ShutdownTimeout: metav1.Duration{Duration: DefaultShutdownTimeout},
		Eviction: EvictionConfig{
			PressureTransitionPeriod: metav1.Duration{Duration: DefaultPressureTransitionPeriod},
			EvaluationInterval:       metav1.Duration{Duration: DefaultEvaluationInterval},
		},
	}
}

// Parse decodes a YAML configuration over Default and validates it. Unknown
// keys are errors: a misspelt key would otherwise be silently ignored.
func Parse(data []byte) (Config, error) {
	cfg := Default()
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks every field and returns all problems found, each naming its
// field, joined into one error wrapping ErrInvalid.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	errs = append(errs, c.Listen.Validate()...)
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		bad("logLevel", "%v", err)
	}
	if c.ShutdownTimeout.Duration < 0 {
		bad("shutdownTimeout", "must not be negative")
	}
	if _, err := c.Node.toNodeinfo(c.Eviction.Hard); err != nil {
		errs = append(errs, err)
	}
	if evErrs := c.Eviction.validate(); len(evErrs) > 0 {
		errs = append(errs, evErrs...)
	} else if _, err := eviction.ParseThresholdConfig(c.Eviction.ThresholdConfig()); err != nil {
		// The eviction manager's own parser has the last word, so that a
		// file accepted here is never refused at start.
		errs = append(errs, fmt.Errorf("eviction: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// NodeinfoConfig is the nodeinfo.Config the node section describes, with the
// hard eviction thresholds that reserve capacity.
func (c Config) NodeinfoConfig() (nodeinfo.Config, error) {
	nc, err := c.Node.toNodeinfo(c.Eviction.Hard)
	if err != nil {
		return nodeinfo.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nc, nil
}

func (n NodeConfig) toNodeinfo(evictionHard map[string]string) (nodeinfo.Config, error) {
	var errs []error
	nc := nodeinfo.Config{
		NodeName:                 n.Name,
		Hostname:                 n.Hostname,
		Labels:                   n.Labels,
		Taints:                   n.Taints,
		RootDir:                  n.RootDir,
		MaxPods:                  n.MaxPods,
		EvictionHard:             evictionHard,
		SupplementalGroupsPolicy: n.SupplementalGroupsPolicy != nil && *n.SupplementalGroupsPolicy,
	}
	if n.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n.Name) {
			errs = append(errs, fmt.Errorf("node.name: %q: %s", n.Name, msg))
		}
	}
	if n.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("node.maxPods: must not be negative"))
	}
	for k, v := range n.Labels {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("node.labels[%q]: key: %s", k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("node.labels[%q]: value %q: %s", k, v, msg))
		}
	}
	for i, t := range n.Taints {
		if t.Key == "" {
			errs = append(errs, fmt.Errorf("node.taints[%d].key: required", i))
		}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			errs = append(errs, fmt.Errorf("node.taints[%d].effect: %q: want NoSchedule, PreferNoSchedule or NoExecute", i, t.Effect))
		}
	}
	var err error
	if nc.Capacity, err = resourceList("node.capacity", n.Capacity); err != nil {
		errs = append(errs, err)
	}
	if nc.Allocatable, err = resourceList("node.allocatable", n.Allocatable); err != nil {
		errs = append(errs, err)
	}
	if nc.SystemReserved, err = resourceList("node.systemReserved", n.SystemReserved); err != nil {
		errs = append(errs, err)
	}
	if nc.KubeReserved, err = resourceList("node.kubeReserved", n.KubeReserved); err != nil {
		errs = append(errs, err)
	}
	return nc, errors.Join(errs...)
}

func resourceList(field string, m map[string]string) (v1.ResourceList, error) {
	if m == nil {
		return nil, nil
	}
	var errs []error
	out := make(v1.ResourceList, len(m))
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s[%q]: %q: %v", field, k, v, err))
		case q.Sign() < 0:
			errs = append(errs, fmt.Errorf("%s[%q]: %q: must not be negative", field, k, v))
		default:
			out[v1.ResourceName(k)] = q
		}
	}
	return out, errors.Join(errs...)
}

// Signals the eviction manager observes, as the eviction package spells
// them; thresholds on any other signal are refused rather than never met.
var knownSignals = map[string]bool{
	"memory.available":   true,
	"nodefs.available":   true,
	"nodefs.inodesFree":  true,
	"imagefs.available":  true,
	"imagefs.inodesFree": true,
	"pid.available":      true,
}

// ThresholdConfig is the eviction manager's view of the thresholds: the
// kubelet's default hard thresholds when Hard is absent.
func (e EvictionConfig) ThresholdConfig() eviction.ThresholdConfig {
	tc := eviction.ThresholdConfig{
		Hard:            e.Hard,
		Soft:            e.Soft,
		SoftGracePeriod: e.SoftGracePeriod,
		MinimumReclaim:  e.MinimumReclaim,
	}
	if tc.Hard == nil {
		tc.Hard = eviction.DefaultThresholdConfig().Hard
	}
	return tc
}

func (e EvictionConfig) validate() []error {
	var errs []error
	thresholds := func(field string, m map[string]string) {
		for sig, v := range m {
			if err := checkSignal(sig); err != nil {
				errs = append(errs, fmt.Errorf("%s[%q]: %w", field, sig, err))
				continue
			}
			if err := checkThresholdValue(v); err != nil {
				errs = append(errs, fmt.Errorf("%s[%q]: %w", field, sig, err))
			}
		}
	}
	thresholds("eviction.hard", e.Hard)
	thresholds("eviction.soft", e.Soft)
	thresholds("eviction.minimumReclaim", e.MinimumReclaim)
	for sig, v := range e.SoftGracePeriod {
		if err := checkSignal(sig); err != nil {
			errs = append(errs, fmt.Errorf("eviction.softGracePeriod[%q]: %w", sig, err))
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("eviction.softGracePeriod[%q]: %q is not a non-negative duration", sig, v))
		}
		if _, ok := e.Soft[sig]; !ok {
			errs = append(errs, fmt.Errorf("eviction.softGracePeriod[%q]: no soft threshold for this signal", sig))
		}
	}
	// As the kubelet's parseThresholdConfig: a soft threshold without a
	// grace period would evict as a hard one does.
	for sig := range e.Soft {
		if _, ok := e.SoftGracePeriod[sig]; !ok && knownSignals[sig] {
			errs = append(errs, fmt.Errorf("eviction.soft[%q]: needs eviction.softGracePeriod[%q]", sig, sig))
		}
	}
	if e.MaxPodGracePeriodSeconds < 0 {
		errs = append(errs, fmt.Errorf("eviction.maxPodGracePeriodSeconds: must not be negative"))
	}
	if e.PressureTransitionPeriod.Duration < 0 {
		errs = append(errs, fmt.Errorf("eviction.pressureTransitionPeriod: must not be negative"))
	}
	if e.EvaluationInterval.Duration <= 0 {
		errs = append(errs, fmt.Errorf("eviction.evaluationInterval: must be positive"))
	}
	return errs
}

func checkSignal(sig string) error {
	if !knownSignals[sig] {
		return fmt.Errorf("unknown signal; want one of memory.available, nodefs.available, nodefs.inodesFree, " +
			"imagefs.available, imagefs.inodesFree, pid.available")
	}
	return nil
}

// checkThresholdValue accepts what the kubelet's parseThresholdStatement
// does: a non-negative quantity, or a percentage in [0%, 100%] (0 disables the threshold).
func checkThresholdValue(v string) error {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return fmt.Errorf("%q is not a percentage", v)
		}
		if f < 0 || f > 100 {
			return fmt.Errorf("%q: percentage must be in [0%%, 100%%]", v)
		}
		return nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("%q is neither a quantity nor a percentage", v)
	}
	if q.Sign() < 0 {
		return fmt.Errorf("%q must not be negative", v)
	}
	return nil
}

// Logger builds the zap logger for LogLevel, JSON to stderr.
func (c Config) Logger() (*zap.Logger, error) {
	zc := zap.NewProductionConfig()
	lvl, err := zapcore.ParseLevel(c.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("logLevel: %w", err)
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	// An admission log that silently drops decisions misleads.
	zc.Sampling = nil
	// Errors here are refusals and failures to serve, not bugs; a stack
	// trace of main would only bury the message.
	zc.DisableStacktrace = true
	return zc.Build()
}
