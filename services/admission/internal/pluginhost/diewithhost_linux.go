package pluginhost

import (
	"os/exec"
	"syscall"
)

// dieWithHost has the kernel SIGKILL the plugin when the host dies. A host
// that exits cleanly kills its plugins itself (client.Kill), but one that is
// SIGKILLed or crashes cannot, and go-plugin's child does not notice its
// parent is gone: every admission crash left its plugins running for good,
// and the restarted admission started new ones beside them.
func dieWithHost(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
