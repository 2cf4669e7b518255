package plugin_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// sdkVersion is the version the SDK and proto are to be tagged with
// (git tags proto/v0.1.0 and services/admission/plugin/v0.1.0), which the
// SDK's go.mod requires of proto.
const sdkVersion = "v0.1.0"

// A plugin written outside the repository, in a module of its own, fetches
// the SDK with `go get` and builds: the SDK depends on no splitlet module
// but proto, at a real version. The two modules are served, as they would
// be once tagged, by a file-based module proxy made from this checkout
// (golang.org/x/mod/zip, the proxy's own format); every other module comes
// from the machine's module cache or its proxy. A private module cache
// keeps an older run's copy of v0.1.0 from standing in for this one.
func TestPluginFetchedAndBuiltOutsideTheRepository(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go toolchain is needed to build the outside plugin: %v", err)
	}
	sdk, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	for path, dir := range map[string]string{
		"github.com/splitlet/splitlet/proto":                     filepath.Join(sdk, "..", "..", "..", "proto"),
		"github.com/splitlet/splitlet/services/admission/plugin": sdk,
	} {
		publish(t, proxy, path, dir)
	}
	cache, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := exec.Command(goBin, "env", "GOPROXY").Output()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/allowall\n\ngo 1.26.0\n",
		"main.go": `package main

import (
	"context"

	"github.com/splitlet/splitlet/services/admission/plugin"
)

type allowAll struct{}

func (allowAll) Admit(ctx context.Context, r *plugin.Request) (*plugin.Response, error) {
	return &plugin.Response{Admit: true}, nil
}

func main() { plugin.Serve(allowAll{}) }
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	modcache := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		// Outside any workspace, as an author's checkout is.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -modcacherw",
			"GOMODCACHE="+modcache,
			"GOPROXY=file://"+proxy+",file://"+filepath.Join(strings.TrimSpace(string(cache)), "cache", "download")+","+strings.TrimSpace(string(upstream)),
			// Not in the checksum database until published.
			"GONOSUMDB=github.com/splitlet/splitlet")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	run("get", "github.com/splitlet/splitlet/services/admission/plugin@"+sdkVersion)
	run("mod", "tidy")
	run("build", "-o", filepath.Join(dir, "allowall"), ".")
	if _, err := os.Stat(filepath.Join(dir, "allowall")); err != nil {
		t.Fatalf("no plugin binary: %v", err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mod), "replace") || !strings.Contains(string(mod), "github.com/splitlet/splitlet/proto "+sdkVersion) {
		t.Errorf("the outside go.mod should need no replace and take proto %s from the SDK:\n%s", sdkVersion, mod)
	}
}

// publish writes module path at sdkVersion from dir into a file-based
// module proxy rooted at proxy: its list, info, go.mod and zip.
func publish(t *testing.T, proxy, path, dir string) {
	t.Helper()
	at := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(map[string]any{"Version": sdkVersion, "Time": time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"list": []byte(sdkVersion + "\n"), sdkVersion + ".info": info, sdkVersion + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(at, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(at, sdkVersion+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := zip.CreateFromDir(f, module.Version{Path: path, Version: sdkVersion}, dir); err != nil {
		t.Fatalf("zip %s: %v", path, err)
	}
}
