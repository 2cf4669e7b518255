#!/usr/bin/env bash
# End-to-end test on a real containerd: `make e2e` runs this.
#
# Installs containerd, runc and busybox-static from Debian if absent, builds the
# test images (hack/images.sh: no registry is reachable), starts a private
# containerd (hack/lib/containerd.sh) and imports them. That is all the bash
# does: the Go tests start splitlet's processes themselves with the project's
# launcher (internal/stack) in front of that containerd. gateway/test/e2e runs
# the shared CRI scenario through a gateway and directly against containerd;
# services/sync/test/e2e starts a gateway and sync and runs sync's pod
# scenarios (init + app containers, logs, exec, deletion) through the
# PodService; internal/localstack runs `make run` + `make stop` on it and
# checks that nothing is left. Everything lives in one temporary directory
# that is removed on exit, success or not; on failure the containerd log is
# printed here and the processes' logs by the tests.
#
# Must run as root (containerd and runc need it). Environment:
#   SPLITLET_E2E_KEEP=1   keep the work directory for inspection
#   E2E_GO_TEST_FLAGS     extra flags for go test (always -count=1 -v, so the
#                         scenario's log lines show in CI output)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[e2e] $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root: it installs packages with apt-get and runs containerd and runc"
  exit 1
fi

# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"

busybox_image=docker.io/library/busybox:1.36
# Short: unix socket paths are limited to 108 bytes.
workdir=$(mktemp -d /tmp/splitlet-e2e.XXXXXX)

cleanup() {
  local rc=$?
  set +e
  if [ "$rc" -ne 0 ]; then
    log "FAILED (exit $rc)"
    if [ -n "${CONTAINERD_LOG:-}" ] && [ -s "$CONTAINERD_LOG" ]; then
      log "---- containerd log (last 100 lines) ----"; tail -n 100 "$CONTAINERD_LOG" >&2
    fi
  fi
  containerd_stop
  if [ "${SPLITLET_E2E_KEEP:-}" = 1 ]; then
    log "kept $workdir"
  else
    rm -rf "$workdir"
  fi
  exit "$rc"
}
trap cleanup EXIT
# A signal ends the script through the EXIT trap, so cleanup runs once.
trap 'exit 130' INT
trap 'exit 143' TERM

log "work directory $workdir"
containerd_install
log "building test images"
"$root/hack/images.sh" "$workdir/images"
containerd_start "$workdir/containerd"
containerd_import "$workdir/images/pause.tar" "$workdir/images/busybox.tar"
log "building splitlet's binaries"
make -C "$root" build >/dev/null

export SPLITLET_CONTAINERD_ENDPOINT="unix://$CONTAINERD_SOCK"
export SPLITLET_BIN_DIR="$root/bin"
export SPLITLET_BUSYBOX_IMAGE="$busybox_image"
# shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags.
(cd "$root/gateway" && go test -count=1 -v ${E2E_GO_TEST_FLAGS:-} ./test/e2e/...)
log "gateway e2e PASS"
# shellcheck disable=SC2086
(cd "$root/services/sync" && go test -count=1 -v ${E2E_GO_TEST_FLAGS:-} ./test/e2e/...)
log "sync e2e PASS"
# make run on containerd, then make stop: nothing of the example pods may be
# left in containerd. Alone, after the suites above: a second stack's sync on
# the same containerd would remove this one's pods as unknown.
# shellcheck disable=SC2086
(cd "$root/internal" && go test -count=1 -v ${E2E_GO_TEST_FLAGS:-} -run TestStopLeavesNothingInContainerd ./localstack/)
log "make run / make stop on containerd PASS"
log "PASS"
