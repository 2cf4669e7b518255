#!/usr/bin/env bash
# End-to-end test on a real containerd: `make e2e` runs this.
#
# Installs containerd, runc and busybox-static from Debian if absent, builds the
# test images (hack/images.sh: no registry is reachable), starts a private
# containerd (hack/lib/containerd.sh) and imports them, builds and starts
# splitlet-gateway with the cri backend in front of it, then runs the shared CRI
# scenario (gateway/test/e2e) through the gateway and directly against
# containerd. Everything lives in one temporary directory that is removed on
# exit, success or not; on failure the containerd and gateway logs are printed.
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
gateway_pid=""
gateway_log=$workdir/gateway.log

cleanup() {
  local rc=$?
  set +e
  if [ -n "$gateway_pid" ] && kill -0 "$gateway_pid" 2>/dev/null; then
    kill -TERM "$gateway_pid"
    wait "$gateway_pid" 2>/dev/null
  fi
  if [ "$rc" -ne 0 ]; then
    log "FAILED (exit $rc)"
    if [ -s "$gateway_log" ]; then
      log "---- gateway log (last 100 lines) ----"; tail -n 100 "$gateway_log" >&2
    fi
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

log "building splitlet-gateway"
make -C "$root" build >/dev/null

gateway_sock=$workdir/gateway.sock
"$root/bin/splitlet-gateway" \
  --backend=cri \
  --runtime-endpoint="unix://$CONTAINERD_SOCK" \
  --socket="$gateway_sock" \
  --allow-host-network \
  --metrics-addr="" \
  --log-level=debug \
  >"$gateway_log" 2>&1 &
gateway_pid=$!
for _ in $(seq 1 100); do
  [ -S "$gateway_sock" ] && break
  if ! kill -0 "$gateway_pid" 2>/dev/null; then
    wait "$gateway_pid" || true
    gateway_pid=""
    log "splitlet-gateway exited before opening $gateway_sock"
    exit 1
  fi
  sleep 0.1
done
if [ ! -S "$gateway_sock" ]; then
  log "splitlet-gateway did not open $gateway_sock within 10 s"
  exit 1
fi
log "splitlet-gateway (pid $gateway_pid) on $gateway_sock -> containerd $CONTAINERD_SOCK"

# shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags.
(cd "$root/gateway" &&
  SPLITLET_GATEWAY_ENDPOINT="unix://$gateway_sock" \
  SPLITLET_CONTAINERD_ENDPOINT="unix://$CONTAINERD_SOCK" \
  SPLITLET_BUSYBOX_IMAGE="$busybox_image" \
  go test -count=1 -v ${E2E_GO_TEST_FLAGS:-} ./test/e2e/...)
log "PASS"
