package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitlet/splitlet/internal/apiauth"
)

func TestResolveServer(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("server: http://10.0.0.1:7443\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badCfg, []byte("sever: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc       string
		flag       string
		env        map[string]string
		configPath string
		want       string
		wantSource AddressSource
		wantErr    string
	}{
		{desc: "flag beats env and config", flag: "http://flag:1", env: map[string]string{ServerEnv: "http://env:2"}, configPath: cfg, want: "http://flag:1", wantSource: SourceFlag},
		{desc: "env beats config", env: map[string]string{ServerEnv: "http://env:2"}, configPath: cfg, want: "http://env:2", wantSource: SourceEnv},
		{desc: "config when no flag or env", configPath: cfg, want: "http://10.0.0.1:7443", wantSource: SourceConfig},
		{desc: "default when the config file is missing", configPath: filepath.Join(dir, "missing.yaml"), want: DefaultServer, wantSource: SourceDefault},
		{desc: "host:port gets http://", flag: "127.0.0.1:9000", want: "http://127.0.0.1:9000", wantSource: SourceFlag},
		{desc: "trailing slash removed", flag: "https://node:7443/", want: "https://node:7443", wantSource: SourceFlag},
		{desc: "unknown config key is an error", configPath: badCfg, wantErr: `unknown field "sever"`},
		{desc: "a unix socket is kept", flag: "unix:///run/x.sock", want: "unix:///run/x.sock", wantSource: SourceFlag},
		{desc: "a relative unix socket", flag: "unix://run/x.sock", wantErr: "absolute path"},
		{desc: "bad scheme", flag: "ftp://node:21", wantErr: `scheme "ftp" is not unix, http or https`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			got, src, err := ResolveServer(tc.flag, getenv, tc.configPath)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || src != tc.wantSource {
				t.Errorf("got %q from %q, want %q from %q", got, src, tc.want, tc.wantSource)
			}
		})
	}
}

func TestDefaultConfigPath(t *testing.T) {
	tests := []struct {
		desc string
		env  map[string]string
		want string
	}{
		{desc: "SPLITLET_CONFIG wins", env: map[string]string{ConfigEnv: "/etc/s.yaml", "HOME": "/home/u"}, want: "/etc/s.yaml"},
		{desc: "XDG_CONFIG_HOME", env: map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/home/u"}, want: "/x/splitlet/config.yaml"},
		{desc: "HOME", env: map[string]string{"HOME": "/home/u"}, want: "/home/u/.config/splitlet/config.yaml"},
		{desc: "nothing", env: nil, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := DefaultConfigPath(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDialCredentials(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("tokenFile: /etc/t\ncertificateAuthority: /ca\nclientCertificate: /c\nclientKey: /k\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{TokenEnv: "from-env"}
	for _, tc := range []struct {
		desc  string
		flags Credentials
		env   map[string]string
		check func(d apiauth.Dial) bool
	}{
		{"flag beats env", Credentials{Token: "from-flag"}, env, func(d apiauth.Dial) bool { return d.Token == "from-flag" }},
		{"env beats config", Credentials{}, env, func(d apiauth.Dial) bool { return d.Token == "from-env" && d.TokenFile == "" }},
		{"config last", Credentials{}, nil, func(d apiauth.Dial) bool {
			return d.Token == "" && d.TokenFile == "/etc/t" && d.CAFile == "/ca" && d.CertFile == "/c" && d.KeyFile == "/k"
		}},
		{"flags beat config", Credentials{CertificateAuthority: "/ca2", ClientCertificate: "/c2", ClientKey: "/k2"}, nil, func(d apiauth.Dial) bool {
			return d.CAFile == "/ca2" && d.CertFile == "/c2" && d.KeyFile == "/k2"
		}},
	} {
		d, err := Dial("unix:///s", tc.flags, func(k string) string { return tc.env[k] }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !tc.check(d) {
			t.Errorf("%s: got %+v", tc.desc, d)
		}
	}
}
