package pluginhost

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	yaml "go.yaml.in/yaml/v2"
)

// FailurePolicy says what a plugin failure (error, timeout, crash, refused
// start) means for the pod, named as in Kubernetes admission webhooks.
type FailurePolicy string

const (
	// Fail rejects the pod: fail-closed, the default, because a policy
	// plugin that cannot answer should not let pods through.
	Fail FailurePolicy = "Fail"
	// Ignore admits the pod as if the plugin had admitted it: fail-open.
	Ignore FailurePolicy = "Ignore"
)

// DefaultTimeout bounds one Admit call of a plugin when the configuration
// sets none.
const DefaultTimeout = time.Second

// Config is the plugin configuration file:
//
//	plugins:
//	  - name: image-allowlist
//	    path: /usr/libexec/splitlet/splitlet-plugin-image-allowlist
//	    sha256: 3b0c...e1
//	    failurePolicy: Fail      # or Ignore; default Fail
//	    timeout: 500ms           # default 1s
//	    env:                     # added to the plugin's environment
//	      SPLITLET_IMAGE_ALLOWLIST: registry.local/
type Config struct {
	// Plugins in the order they are asked.
	Plugins []PluginConfig `yaml:"plugins"`
}

// PluginConfig is one plugin of the chain.
type PluginConfig struct {
	// Name identifies the plugin in logs and rejection messages; unique.
	Name string `yaml:"name"`
	// Path of the binary; a relative path is relative to the configuration
	// file's directory.
	Path string `yaml:"path"`
	// SHA256 is the hex SHA-256 of the binary; a binary whose sum differs is
	// not started.
	SHA256 string `yaml:"sha256"`
	// FailurePolicy applies when the plugin fails; default Fail.
	FailurePolicy FailurePolicy `yaml:"failurePolicy"`
	// Timeout bounds one Admit call; default DefaultTimeout.
	Timeout Duration `yaml:"timeout"`
	// Env is added to the environment the plugin inherits from the host;
	// it is how plugins are configured.
	Env map[string]string `yaml:"env"`
}

// Duration is a time.Duration written as in Go ("500ms", "2s").
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(unmarshal func(interface{}) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// LoadConfig reads and validates a configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read admission plugin config: %w", err)
	}
	cfg, err := ParseConfig(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses and validates a configuration, fills in defaults and
// resolves relative paths against dir. Errors wrap errdefs.ErrInvalidArgument.
func ParseConfig(data []byte, dir string) (*Config, error) {
	var cfg Config
	// Strict: a misspelt key (failurepolicy) must not silently fall back
	// to a default.
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("%w: parse admission plugin config: %v", errdefs.ErrInvalidArgument, err)
	}
	seen := map[string]bool{}
	for i := range cfg.Plugins {
		p := &cfg.Plugins[i]
		if err := p.validate(dir); err != nil {
			return nil, fmt.Errorf("%w: admission plugin %d (%q): %v", errdefs.ErrInvalidArgument, i, p.Name, err)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("%w: admission plugin name %q is used twice", errdefs.ErrInvalidArgument, p.Name)
		}
		seen[p.Name] = true
	}
	return &cfg, nil
}

func (p *PluginConfig) validate(dir string) error {
	if p.Name == "" {
		return fmt.Errorf("name is required")
	}
	if p.Path == "" {
		return fmt.Errorf("path is required")
	}
	if !filepath.IsAbs(p.Path) && dir != "" {
		p.Path = filepath.Join(dir, p.Path)
	}
	p.SHA256 = strings.ToLower(strings.TrimSpace(p.SHA256))
	if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 {
		return fmt.Errorf("sha256 %q is not 64 hex digits", p.SHA256)
	}
	switch p.FailurePolicy {
	case "":
		p.FailurePolicy = Fail
	case Fail, Ignore:
	default:
		return fmt.Errorf("failurePolicy %q is neither %s nor %s", p.FailurePolicy, Fail, Ignore)
	}
	switch {
	case p.Timeout == 0:
		p.Timeout = Duration(DefaultTimeout)
	case p.Timeout < 0:
		return fmt.Errorf("timeout %s is negative", time.Duration(p.Timeout))
	}
	return nil
}
