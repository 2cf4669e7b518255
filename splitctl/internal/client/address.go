package client

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	// DefaultServer is where splitlet-sync serves the PodService by default.
	DefaultServer = "http://127.0.0.1:7443"
	// ServerEnv names the environment variable holding the server address.
	ServerEnv = "SPLITLET_SERVER"
	// ConfigEnv names the environment variable holding the config file path.
	ConfigEnv = "SPLITLET_CONFIG"
)

// Config is splitctl's config file, ~/.config/splitlet/config.yaml.
type Config struct {
	// Server is the PodService base URL, e.g. http://127.0.0.1:7443.
	Server string `json:"server,omitempty"`
}

// AddressSource says where ResolveServer found the address, for -v output
// and error messages.
type AddressSource string

const (
	SourceFlag    AddressSource = "--server flag"
	SourceEnv     AddressSource = ServerEnv
	SourceConfig  AddressSource = "config file"
	SourceDefault AddressSource = "default"
)

// Getenv reads an environment variable; tests pass a map's lookup.
type Getenv func(string) string

// DefaultConfigPath is $SPLITLET_CONFIG, else $XDG_CONFIG_HOME/splitlet/config.yaml,
// else ~/.config/splitlet/config.yaml. It is "" when no home is known.
func DefaultConfigPath(getenv Getenv) string {
	if p := getenv(ConfigEnv); p != "" {
		return p
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "splitlet", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "splitlet", "config.yaml")
	}
	return ""
}

// LoadConfig reads the config file at path. A missing file is an empty config:
// the file is optional.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("reading config %s: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return cfg, fmt.Errorf("parsing config %s: %w", path, err)
	}
	return cfg, nil
}

// ResolveServer picks the server address: the --server flag, then
// SPLITLET_SERVER, then the config file's server, then DefaultServer — the
// same "explicit beats ambient" order kubectl gives --server over kubeconfig.
// The address is normalised to a base URL (http:// is added when missing).
func ResolveServer(flag string, getenv Getenv, configPath string) (string, AddressSource, error) {
	addr, src := flag, SourceFlag
	if addr == "" {
		addr, src = getenv(ServerEnv), SourceEnv
	}
	if addr == "" {
		cfg, err := LoadConfig(configPath)
		if err != nil {
			return "", "", err
		}
		addr, src = cfg.Server, SourceConfig
	}
	if addr == "" {
		addr, src = DefaultServer, SourceDefault
	}
	u, err := normalize(addr)
	if err != nil {
		return "", "", fmt.Errorf("invalid server address %q from %s: %w", addr, src, err)
	}
	return u, src, nil
}

func normalize(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("no host")
	}
	return strings.TrimRight(u.String(), "/"), nil
}
