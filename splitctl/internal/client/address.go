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

	"github.com/splitlet/splitlet/internal/apiauth"
)

const (
	// DefaultServer is where splitlet-sync serves the PodService by default.
	DefaultServer = "unix:///run/splitlet/sync.sock"
	// ServerEnv names the environment variable holding the server address.
	ServerEnv = "SPLITLET_SERVER"
	// TokenEnv names the environment variable holding the bearer token.
	TokenEnv = "SPLITLET_TOKEN"
	// ConfigEnv names the environment variable holding the config file path.
	ConfigEnv = "SPLITLET_CONFIG"
)

// Config is splitctl's config file, ~/.config/splitlet/config.yaml.
type Config struct {
	// Server is the PodService address, e.g. unix:///run/splitlet/sync.sock
	// or https://127.0.0.1:7443.
	Server string `json:"server,omitempty"`
	// Token is the bearer token sync's --listen-token-file holds;
	// TokenFile names a file whose first line is one.
	Token     string `json:"token,omitempty"`
	TokenFile string `json:"tokenFile,omitempty"`
	// CertificateAuthority verifies an https server; ClientCertificate
	// and ClientKey are splitctl's certificate (mutual TLS).
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	ClientCertificate    string `json:"clientCertificate,omitempty"`
	ClientKey            string `json:"clientKey,omitempty"`
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
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		if !strings.HasPrefix(path, "/") {
			return "", errors.New("a unix socket is unix:// and an absolute path")
		}
		return addr, nil
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q is not unix, http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("no host")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Credentials are the flags that say how splitctl proves who it is.
type Credentials struct {
	Token, CertificateAuthority, ClientCertificate, ClientKey string
}

// Dial is how splitctl reaches server: each credential from its flag,
// then (the token) SPLITLET_TOKEN, then the config file.
func Dial(server string, flags Credentials, getenv Getenv, configPath string) (apiauth.Dial, error) {
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return apiauth.Dial{}, err
	}
	d := apiauth.Dial{Endpoint: server, Token: flags.Token, CAFile: flags.CertificateAuthority,
		CertFile: flags.ClientCertificate, KeyFile: flags.ClientKey}
	if d.Token == "" {
		d.Token = getenv(TokenEnv)
	}
	if d.Token == "" {
		d.Token, d.TokenFile = cfg.Token, cfg.TokenFile
	}
	if d.CAFile == "" {
		d.CAFile = cfg.CertificateAuthority
	}
	if d.CertFile == "" && d.KeyFile == "" {
		d.CertFile, d.KeyFile = cfg.ClientCertificate, cfg.ClientKey
	}
	return d, nil
}
