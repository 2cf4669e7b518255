package plugin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A plugin written outside the repository, in a module of its own, builds
// against the SDK module: the SDK depends on no splitlet module but proto.
// The outside module points at this checkout with replace directives, as an
// author would before the SDK and proto are tagged.
func TestPluginBuildsOutsideTheRepository(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go toolchain is needed to build the outside plugin: %v", err)
	}
	sdk, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	proto := filepath.Join(sdk, "..", "..", "..", "proto")
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/allowall\n\ngo 1.26.0\n\n" +
			"require github.com/splitlet/splitlet/services/admission/plugin v0.0.0\n\n" +
			"replace github.com/splitlet/splitlet/services/admission/plugin => " + sdk + "\n\n" +
			"replace github.com/splitlet/splitlet/proto => " + proto + "\n",
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
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Outside any workspace, as an author's checkout is.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	run("mod", "tidy")
	run("build", "-o", filepath.Join(dir, "allowall"), ".")
	if _, err := os.Stat(filepath.Join(dir, "allowall")); err != nil {
		t.Fatalf("no plugin binary: %v", err)
	}
}
