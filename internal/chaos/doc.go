// Package chaos holds the chaos suite (`make chaos`): the whole stack on the
// fake runtime, with an admission plugin child, is killed process by
// process with SIGKILL during a pod burst and during a mass delete, while
// the fake runtime fails a share of its calls and answers slowly. After each
// phase the suite waits for the stack to converge and counts what the
// kubelet's guarantees say must be zero: pods lost, pods whose status
// disagrees with the runtime, duplicate sandboxes, containers restarted by a
// restart of splitlet itself, and sandboxes or containers left behind by
// deleted pods. RELIABILITY.md records the figures.
//
// Its shorter form on containerd (`make chaos-containerd`, run when
// CHAOS_CONTAINERD_DIR names a private containerd's directory) kills
// containerd too, then wipes it and reboots it twice under the running
// stack, and checks that every pod runs again in a new sandbox with its
// restart count carried on and that no dead sandbox stays.
//
// The test is behind the `chaos` build tag so `make test` does not run it:
//
//	cd internal && go test -tags chaos -count=1 -v ./chaos/
package chaos
