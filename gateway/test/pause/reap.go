package main

import "syscall"

// reapChildren collects every child that has exited, without blocking, and
// returns their PIDs. SIGCHLD signals coalesce, so one signal may stand for
// several exited children: keep waiting until none is left.
func reapChildren() []int {
	var pids []int
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		// pid 0: children exist but none has exited; ECHILD: no children.
		if err != nil || pid <= 0 {
			return pids
		}
		pids = append(pids, pid)
	}
}
