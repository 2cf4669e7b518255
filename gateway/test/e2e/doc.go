// Package e2e holds the end-to-end tests that need a real container runtime:
// the shared CRI scenario (internal/scenario) through a splitlet-gateway in
// front of containerd, and directly against containerd for comparison.
//
// They take their endpoints from the environment and skip without them;
// `make e2e` (hack/e2e.sh) starts a private containerd and sets:
//
//	SPLITLET_CONTAINERD_ENDPOINT  containerd's socket: TestMain starts a
//	                              gateway in front of it (internal/stack),
//	                              and the direct subtest uses it
//	SPLITLET_GATEWAY_ENDPOINT     a gateway already running (instead)
//	SPLITLET_BIN_DIR              built binaries (default: the test builds them)
//	SPLITLET_BUSYBOX_IMAGE        a busybox image present in containerd's
//	                              k8s.io namespace (default docker.io/library/busybox:1.36)
package e2e
