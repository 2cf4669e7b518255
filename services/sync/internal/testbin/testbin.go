// Package testbin builds splitlet's binaries for tests that run them as real
// processes (the scenario tests and the API-server test), so each TestMain
// does not carry its own copy of the build loop.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Binaries are the commands the process tests start, by output name.
var Binaries = map[string]string{
	"splitlet-gateway":   "github.com/splitlet/splitlet/gateway/cmd/splitlet-gateway",
	"splitlet-sync":      "github.com/splitlet/splitlet/services/sync/cmd/splitlet-sync",
	"splitlet-admission": "github.com/splitlet/splitlet/services/admission/cmd/splitlet-admission",
}

// Build compiles Binaries into a new temporary directory named after prefix
// and returns it; the caller removes it. Build output goes to stderr.
func Build(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	for out, pkg := range Binaries {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, out), pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("build %s: %w", pkg, err)
		}
	}
	return dir, nil
}
