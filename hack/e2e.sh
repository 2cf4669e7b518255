#!/usr/bin/env bash
# End-to-end test on a real containerd: `make e2e` runs this.
#
# Installs containerd, runc and busybox-static from Debian if absent, builds the
# test images (hack/images.sh: no registry is reachable), starts a private
# containerd (hack/lib/containerd.sh) and imports them, builds and starts
# splitlet-gateway with the cri backend in front of it, then runs the shared CRI
# scenario (gateway/test/e2e) through the gateway and directly against
# containerd. Then it starts splitlet-sync on the gateway and runs sync's pod
# scenarios (services/sync/test/e2e: init + app containers, logs, exec,
# deletion) through the PodService. Everything lives in one temporary directory
# that is removed on exit, success or not; on failure the containerd, gateway
# and sync logs are printed.
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
sync_pid=""
sync_log=$workdir/sync.log

cleanup() {
  local rc=$?
  set +e
  # sync first: it is the gateway's client, and its pods' containers are
  # containerd's to kill below.
  if [ -n "$sync_pid" ] && kill -0 "$sync_pid" 2>/dev/null; then
    kill -TERM "$sync_pid"
    wait "$sync_pid" 2>/dev/null
  fi
  if [ -n "$gateway_pid" ] && kill -0 "$gateway_pid" 2>/dev/null; then
    kill -TERM "$gateway_pid"
    wait "$gateway_pid" 2>/dev/null
  fi
  if [ "$rc" -ne 0 ]; then
    log "FAILED (exit $rc)"
    if [ -s "$sync_log" ]; then
      log "---- sync log (last 100 lines) ----"; tail -n 100 "$sync_log" >&2
    fi
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

log "building splitlet-gateway and splitlet-sync"
make -C "$root" build >/dev/null

gateway_sock=$workdir/gateway.sock
# sync's pod directories (volumes under its state dir) live in the work
# directory, outside the policy's default /var/lib/splitlet: allow them.
sync_dir=$workdir/sync
mkdir -p "$sync_dir/state" "$sync_dir/logs"
"$root/bin/splitlet-gateway" \
  --backend=cri \
  --runtime-endpoint="unix://$CONTAINERD_SOCK" \
  --socket="$gateway_sock" \
  --allow-host-network \
  --allowed-host-path=/var/lib/splitlet \
  --allowed-host-path="$sync_dir" \
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
log "gateway e2e PASS"

# splitlet-sync on the gateway. Short relist and resync periods and a 1 s
# crash-loop back-off (hidden flag; the kubelet's is 10 s) keep the restart
# scenario fast; the behaviour is the same.
# A free port: the first in a random run that nothing answers on.
sync_port=$((20000 + RANDOM % 20000))
while (exec 3<>"/dev/tcp/127.0.0.1/$sync_port") 2>/dev/null; do
  sync_port=$((sync_port + 1))
done
sync_addr=127.0.0.1:$sync_port
"$root/bin/splitlet-sync" \
  --runtime-endpoint="unix://$gateway_sock" \
  --listen="$sync_addr" \
  --state-dir="$sync_dir/state" \
  --pod-logs-root="$sync_dir/logs" \
  --node-name=e2e \
  --relist-interval=500ms \
  --resync-interval=2s \
  --crashloop-backoff-base=1s \
  --crashloop-backoff-max=4s \
  --log-level=debug \
  >"$sync_log" 2>&1 &
sync_pid=$!
# GET /healthz with bash alone (no curl on a minimal machine): true on 200.
sync_healthy() {
  local status
  # Braces: a redirection on exec itself would silence the script's stderr.
  { exec 3<>"/dev/tcp/127.0.0.1/$sync_port"; } 2>/dev/null || return 1
  printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n' "$sync_addr" >&3
  IFS= read -r -t 2 status <&3 || status=""
  exec 3<&-
  [[ $status == "HTTP/1."?" 200"* ]]
}
for _ in $(seq 1 100); do
  sync_healthy && break
  if ! kill -0 "$sync_pid" 2>/dev/null; then
    wait "$sync_pid" || true
    sync_pid=""
    log "splitlet-sync exited before serving $sync_addr"
    exit 1
  fi
  sleep 0.1
done
if ! sync_healthy; then
  log "splitlet-sync did not serve http://$sync_addr/healthz within 10 s"
  exit 1
fi
log "splitlet-sync (pid $sync_pid) on $sync_addr -> gateway $gateway_sock"

# shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags.
(cd "$root/services/sync" &&
  SPLITLET_SYNC_ADDR="$sync_addr" \
  SPLITLET_GATEWAY_ENDPOINT="unix://$gateway_sock" \
  SPLITLET_POD_LOGS_ROOT="$sync_dir/logs" \
  SPLITLET_BUSYBOX_IMAGE="$busybox_image" \
  go test -count=1 -v ${E2E_GO_TEST_FLAGS:-} ./test/e2e/...)
log "sync e2e PASS"
log "PASS"
