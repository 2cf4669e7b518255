package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v2"
)

// The real-process tests build the example plugin and the test plugin once
// per package run, into a directory removed by TestMain.
var (
	binDir   string
	buildOne sync.Once
	buildErr error
	bins     struct{ allowlist, testplugin string }
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envHost); path != "" {
		os.Exit(runHost(path, os.Getenv(envHost+"_SUM")))
	}
	dir, err := os.MkdirTemp("", "pluginhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pluginBinaries builds the plugins on first use. A missing go toolchain
// skips (the tests then cannot build a child process); a failed build fails.
func pluginBinaries(t testing.TB) (allowlist, testplugin string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("real-process plugin tests need the go toolchain in PATH to build the plugins: " + err.Error())
	}
	buildOne.Do(func() {
		bins.allowlist = filepath.Join(binDir, "splitlet-plugin-image-allowlist")
		bins.testplugin = filepath.Join(binDir, "testplugin")
		for out, pkg := range map[string]string{
			bins.allowlist:  "github.com/splitlet/splitlet/services/admission/cmd/splitlet-plugin-image-allowlist",
			bins.testplugin: "./testdata/testplugin",
		} {
			cmd := exec.Command(goBin, "build", "-o", out, pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as `make build`: its packages are reused
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bins.allowlist, bins.testplugin
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// copyBinary copies a plugin binary into a test's own directory, so a test
// may replace it without affecting others.
func copyBinary(t testing.TB, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// writeConfig writes plugins as a configuration file and loads it back, so
// the real-process tests also go through the file format.
func writeConfig(t testing.TB, plugins ...PluginConfig) *Config {
	t.Helper()
	type entry struct {
		Name          string            `yaml:"name"`
		Path          string            `yaml:"path"`
		SHA256        string            `yaml:"sha256"`
		FailurePolicy string            `yaml:"failurePolicy,omitempty"`
		Timeout       string            `yaml:"timeout,omitempty"`
		Env           map[string]string `yaml:"env,omitempty"`
	}
	var doc struct {
		Plugins []entry `yaml:"plugins"`
	}
	for _, p := range plugins {
		e := entry{Name: p.Name, Path: p.Path, SHA256: p.SHA256, FailurePolicy: string(p.FailurePolicy), Env: p.Env}
		if p.Timeout != 0 {
			e.Timeout = time.Duration(p.Timeout).String()
		}
		doc.Plugins = append(doc.Plugins, e)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plugins.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig:\n%s\n%v", b, err)
	}
	return cfg
}
