// Package e2e holds splitlet-sync's end-to-end tests on a real container
// runtime: pods applied through the PodService of a running splitlet-sync,
// which drives containerd through a splitlet-gateway with the cri backend.
// They cover what the fake backend cannot prove: init containers ordering on
// real processes, CRI log files written by containerd (tail, previous, follow),
// exec in a real container, image volumes mounted by the runtime (containerd
// 2.1 or newer), and that deletion leaves no sandbox behind.
//
// They take their endpoints from the environment and skip without them;
// `make e2e` (hack/e2e.sh) starts a private containerd and sets
// SPLITLET_CONTAINERD_ENDPOINT; TestMain then starts a gateway and sync in
// front of it with the project's launcher (internal/stack) and sets the
// variables below for the tests. To run against a stack already running,
// set them yourself:
//
//	SPLITLET_SYNC_ADDR          host:port or unix:///path of sync's PodService
//	SPLITLET_TOKEN              the bearer token it requires, if any
//	SPLITLET_GATEWAY_ENDPOINT   the gateway's unix socket, for CRI-level
//	                            checks (the tests that need it skip without it)
//	SPLITLET_POD_LOGS_ROOT      sync's --pod-logs-root, to check where containerd
//	                            writes each instance's log (optional)
//	SPLITLET_BUSYBOX_IMAGE      a busybox image present in containerd's k8s.io
//	                            namespace (default docker.io/library/busybox:1.36)
//
// Pods use hostNetwork (e2e has no CNI) and imagePullPolicy IfNotPresent (no
// registry is reachable), and live in their own namespace so the CRI checks
// only look at pods of these tests.
//
//	cd services/sync && SPLITLET_SYNC_ADDR=127.0.0.1:7443 \
//	  SPLITLET_GATEWAY_ENDPOINT=unix:///run/splitlet/gateway.sock go test -count=1 -v ./test/e2e/...
package e2e
