// Command pause is the sandbox ("infra") container of the images splitlet's
// end-to-end tests build themselves, because no registry is reachable to pull
// registry.k8s.io/pause.
//
// Like the kubelet's pause container it does nothing: it holds the pod's
// namespaces open, exits 0 on SIGTERM or SIGINT, and, being PID 1 of the pod's
// PID namespace when the namespace is shared, reaps orphaned children so they
// do not linger as zombies. Build it static (CGO_ENABLED=0); the image holds
// nothing else.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run())
}

// run waits for signals until told to stop; it returns the exit code.
//
// Matches the behaviour of kubernetes/build/pause/linux/pause.c: SIGINT and
// SIGTERM end the process with status 0, SIGCHLD triggers a non-blocking
// waitpid loop.
func run() int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reapChildren()
			continue
		}
		return 0
	}
	return 0
}
