//go:build !linux

package pluginhost

import "os/exec"

// dieWithHost does nothing where the kernel offers no parent-death signal:
// a plugin outlives a host that crashed.
func dieWithHost(*exec.Cmd) {}
