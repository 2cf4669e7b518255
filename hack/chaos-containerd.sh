#!/usr/bin/env bash
# The chaos suite's shorter form on a real containerd: `make chaos-containerd`.
#
# Installs containerd, runc and busybox-static from Debian if absent, builds
# the test images (hack/images.sh: no registry is reachable), writes a
# private containerd's config and imports the images with
# hack/lib/containerd.sh, then stops that containerd: the Go test
# (internal/chaos, tag chaos) starts it again as its own child, because it
# SIGKILLs and restarts it, and wipes it, during the run. The test starts
# splitlet's processes with the project's launcher, the gateway with
# --backend=cri in front of that containerd. Everything lives in one
# temporary directory removed on exit; containerd_stop reaps what shims and
# mounts are left.
#
# Must run as root. Environment:
#   CHAOS_PODS              burst size (default 30 on containerd)
#   SPLITLET_CHAOS_KEEP=1   keep the work directory for inspection (stack/
#                           holds the logs and state of sync, admission and
#                           the gateway)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[chaos-containerd] $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root: it installs packages with apt-get and runs containerd and runc"
  exit 1
fi

# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"

# Short: unix socket paths are limited to 108 bytes.
workdir=$(mktemp -d /tmp/splitlet-chaos.XXXXXX)

cleanup() {
  local rc=$?
  set +e
  if [ "$rc" -ne 0 ] && [ -n "${CONTAINERD_LOG:-}" ] && [ -s "$CONTAINERD_LOG" ]; then
    log "FAILED (exit $rc)"
    log "---- containerd log (last 60 lines) ----"; tail -n 60 "$CONTAINERD_LOG" >&2
  fi
  # Should the test have died without its clean-up: the stack by its pid
  # files, then containerd by the pid it recorded, if that pid still runs
  # our config (containerd_stop then kills the pods' tasks).
  if [ -d "$workdir/stack" ]; then
    "$root/bin/splitlet-stack" --dir="$workdir/stack" stop >/dev/null 2>&1
  fi
  local pid
  pid=$(cat "$workdir/containerd/containerd.pid" 2>/dev/null) || true
  if [ -n "$pid" ] && [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *"$workdir/containerd/config.toml"* ]]; then
    CONTAINERD_PID=$pid
  fi
  containerd_stop
  # Containers runc created but containerd died before starting ("runc
  # init" waiting): ours are the ones whose bundle is under our directory.
  local id
  for id in $(runc --root /run/containerd/runc/k8s.io list 2>/dev/null | awk -v d="$workdir/" 'index($4, d) == 1 {print $1}'); do
    runc --root /run/containerd/runc/k8s.io delete --force "$id" >/dev/null 2>&1
  done
  if [ "${SPLITLET_CHAOS_KEEP:-}" = 1 ]; then
    log "kept $workdir"
  else
    rm -rf "$workdir"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "work directory $workdir"
containerd_install
"$root/hack/images.sh" "$workdir/images"
containerd_start "$workdir/containerd"
containerd_import "$workdir/images/pause.tar" "$workdir/images/busybox.tar"
# The test owns containerd from here on (see above).
containerd_stop
make -C "$root" build >/dev/null

export SPLITLET_BIN_DIR="$root/bin"
export CHAOS_CONTAINERD_DIR="$CONTAINERD_DIR"
export CHAOS_IMAGES="$workdir/images/pause.tar $workdir/images/busybox.tar"
cd "$root/internal"
go test -tags chaos -count=1 -race -v -run TestChaos ./chaos/
