package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Packages are the commands a stack runs, by binary name.
var Packages = map[string]string{
	GatewayBinary:   "github.com/splitlet/splitlet/gateway/cmd/splitlet-gateway",
	AdmissionBinary: "github.com/splitlet/splitlet/services/admission/cmd/splitlet-admission",
	SyncBinary:      "github.com/splitlet/splitlet/services/sync/cmd/splitlet-sync",
}

// SplitctlPackage is splitctl's command, which tests driving the stack as
// a user would add to Build.
const SplitctlPackage = "github.com/splitlet/splitlet/splitctl/cmd/splitctl"

// Build compiles the stack's binaries, and the extra packages, into dir
// with the go toolchain of PATH, from the workspace the caller runs in
// (go.work), and returns dir. Tests call it from TestMain; `make build`
// serves the launcher command.
func Build(ctx context.Context, dir string, extra ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, pkg := range Packages {
		args = append(args, pkg)
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return dir, nil
}
