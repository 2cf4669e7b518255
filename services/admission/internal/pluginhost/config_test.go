package pluginhost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

const sum0 = "0000000000000000000000000000000000000000000000000000000000000000"

func TestParseConfig(t *testing.T) {
	tests := []struct {
		desc    string
		yaml    string
		want    []PluginConfig
		wantErr string
	}{
		{
			desc: "defaults: fail-closed, 1s, relative path resolved",
			yaml: "plugins:\n- name: a\n  path: bin/a\n  sha256: " + strings.ToUpper(sum0) + "\n",
			want: []PluginConfig{{Name: "a", Path: "/etc/splitlet/bin/a", SHA256: sum0, FailurePolicy: Fail, Timeout: Duration(time.Second)}},
		},
		{
			desc: "explicit values kept, order kept",
			yaml: "plugins:\n- name: b\n  path: /opt/b\n  sha256: " + sum0 + "\n  failurePolicy: Ignore\n  timeout: 250ms\n  env: {X: y}\n- name: a\n  path: /opt/a\n  sha256: " + sum0 + "\n",
			want: []PluginConfig{
				{Name: "b", Path: "/opt/b", SHA256: sum0, FailurePolicy: Ignore, Timeout: Duration(250 * time.Millisecond), Env: map[string]string{"X": "y"}},
				{Name: "a", Path: "/opt/a", SHA256: sum0, FailurePolicy: Fail, Timeout: Duration(time.Second)},
			},
		},
		{desc: "empty file has no plugins", yaml: "", want: nil},
		{desc: "unknown key refused", yaml: "plugins:\n- name: a\n  path: /a\n  sha256: " + sum0 + "\n  failurepolicy: Ignore\n", wantErr: "failurepolicy"},
		{desc: "unknown policy refused", yaml: "plugins:\n- name: a\n  path: /a\n  sha256: " + sum0 + "\n  failurePolicy: Open\n", wantErr: `failurePolicy "Open"`},
		{desc: "bad timeout refused", yaml: "plugins:\n- name: a\n  path: /a\n  sha256: " + sum0 + "\n  timeout: soon\n", wantErr: "soon"},
		{desc: "negative timeout refused", yaml: "plugins:\n- name: a\n  path: /a\n  sha256: " + sum0 + "\n  timeout: -1s\n", wantErr: "negative"},
		{desc: "short checksum refused", yaml: "plugins:\n- name: a\n  path: /a\n  sha256: abc\n", wantErr: "64 hex digits"},
		{desc: "missing checksum refused", yaml: "plugins:\n- name: a\n  path: /a\n", wantErr: "64 hex digits"},
		{desc: "missing name refused", yaml: "plugins:\n- path: /a\n  sha256: " + sum0 + "\n", wantErr: "name is required"},
		{desc: "missing path refused", yaml: "plugins:\n- name: a\n  sha256: " + sum0 + "\n", wantErr: "path is required"},
		{desc: "duplicate name refused", yaml: "plugins:\n- {name: a, path: /a, sha256: " + sum0 + "}\n- {name: a, path: /b, sha256: " + sum0 + "}\n", wantErr: "used twice"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.yaml), "/etc/splitlet")
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseConfig = %+v, want an error containing %q", cfg, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || !errdefs.IsInvalidArgument(err) {
					t.Fatalf("error %q: want InvalidArgument containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if len(cfg.Plugins) != len(tc.want) {
				t.Fatalf("got %d plugins, want %d: %+v", len(cfg.Plugins), len(tc.want), cfg.Plugins)
			}
			for i, want := range tc.want {
				got := cfg.Plugins[i]
				if got.Name != want.Name || got.Path != want.Path || got.SHA256 != want.SHA256 ||
					got.FailurePolicy != want.FailurePolicy || got.Timeout != want.Timeout || len(got.Env) != len(want.Env) {
					t.Errorf("plugin %d = %+v, want %+v", i, got, want)
				}
				for k, v := range want.Env {
					if got.Env[k] != v {
						t.Errorf("plugin %d env %s = %q, want %q", i, k, got.Env[k], v)
					}
				}
			}
		})
	}
}

func TestLoadConfigResolvesAgainstFileDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(path, []byte("plugins:\n- {name: a, path: a.bin, sha256: "+sum0+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "a.bin"); cfg.Plugins[0].Path != want {
		t.Errorf("path = %q, want %q", cfg.Plugins[0].Path, want)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("LoadConfig of a missing file succeeded")
	}
}
