#!/usr/bin/env bash
# The local stack, one command: `make run` (the README's quickstart) runs this.
#
# Builds the binaries (make build), starts splitlet-gateway, splitlet-admission
# and splitlet-sync in the background as the current user, with every path
# moved under _out/run/ (no root, nothing installed), waits until each is
# healthy, applies the example pods in examples/ and waits for them to run,
# prints `splitctl get pods` and what to try next, then stays in the
# foreground until Ctrl-C, which stops all three (sync first: it is the
# gateway's client).
#
# The gateway's default backend is `fake`, the in-memory CRI runtime built into
# it: pods "run" without containerd, and the pod annotations
# fake.splitlet.dev/behavior.<container> script what their containers do.
#
#   hack/run.sh            start, apply examples/, stay in the foreground
#   hack/run.sh stop       stop a stack started with RUN_DETACH=1
#   hack/run.sh status     show whether the stack runs, and its addresses
#
# Environment (make run passes these through):
#   RUNTIME_ENDPOINT=unix:///run/containerd/containerd.sock
#                          use the gateway's `cri` backend in front of that
#                          runtime instead of `fake` (its socket usually needs
#                          root; the examples need busybox:1.36 in its k8s.io
#                          namespace: hack/images.sh builds it, no registry)
#   RUN_DETACH=1           leave the stack running and return
#   RUN_SMOKE=1            CI mode: start, apply, wait Running, print the pods,
#                          stop; exit 0 only if every step worked
#   RUN_NO_BUILD=1         use bin/ as it is
#   RUN_DIR                state, sockets and logs (default _out/run)
#   RUN_SYNC_ADDR, RUN_ADMISSION_ADDR, RUN_GATEWAY_METRICS_ADDR
#                          listen addresses (defaults 127.0.0.1:7443, :7444, :9101)
#   RUN_TIMEOUT            how long to wait for the pods (default 120s)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/bin
run_dir=${RUN_DIR:-$root/_out/run}
sync_addr=${RUN_SYNC_ADDR:-127.0.0.1:7443}
admission_addr=${RUN_ADMISSION_ADDR:-127.0.0.1:7444}
gateway_metrics=${RUN_GATEWAY_METRICS_ADDR:-127.0.0.1:9101}
runtime_endpoint=${RUNTIME_ENDPOINT:-}
wait_timeout=${RUN_TIMEOUT:-120s}
server=http://$sync_addr
# Stop order: a client before the server it uses.
components=(sync admission gateway)

log() { echo "[run] $*" >&2; }
die() { log "$*"; exit 1; }

# pid_alive NAME: the pid recorded for NAME still runs that binary. The
# cmdline check keeps a recycled pid from being taken for ours.
pid_alive() {
  local pidfile=$run_dir/$1.pid pid
  [ -s "$pidfile" ] || return 1
  pid=$(<"$pidfile")
  kill -0 "$pid" 2>/dev/null || return 1
  # Read first, then match: `tr | grep -q` under pipefail reports a live
  # process as gone whenever grep's early exit kills tr with SIGPIPE.
  local cmdline
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmdline == *"splitlet-$1"* ]]
}

# drain_runtime: on a real runtime, remove the example pods before sync
# stops. Like the kubelet, sync leaves running pods alone when it exits, so
# without this they would outlive the stack in containerd. The fake backend
# forgets everything on exit and needs none of it.
drain_runtime() {
  local srv names i
  [ -f "$run_dir/backend" ] && [ "$(<"$run_dir/backend")" = cri ] || return 0
  pid_alive sync || return 0
  srv=$(sed -n 's/^SPLITLET_SERVER=//p' "$run_dir/env" 2>/dev/null)
  [ -n "$srv" ] || return 0
  log "deleting the pods from the runtime (static ones by removing their manifests)"
  rm -f "$run_dir"/manifests/*
  names=$("$bin/splitctl" --server="$srv" get pods -o name 2>/dev/null) || names=""
  names=${names//pod\//}
  if [ -n "$names" ]; then
    # word splitting is wanted: one name per argument; static pods answer
    # NotFound here and go away with their manifest.
    # shellcheck disable=SC2086
    "$bin/splitctl" --server="$srv" delete pod $names --wait=false >/dev/null 2>&1 || true
  fi
  for ((i = 0; i < 150; i++)); do
    names=$("$bin/splitctl" --server="$srv" get pods -o name 2>/dev/null) || break
    [ -z "$names" ] && return 0
    sleep 0.2
  done
  log "pods still present after 30s: ${names//$'\n'/ }"
}

# stop_stack: SIGTERM each process in order, wait for it (its own shutdown
# timeout is 10s), SIGKILL what is left after 15s.
stop_stack() {
  local name pid i stopped=0
  drain_runtime
  for name in "${components[@]}"; do
    pid_alive "$name" || { rm -f "$run_dir/$name.pid"; continue; }
    pid=$(<"$run_dir/$name.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "splitlet-$name (pid $pid) ignored SIGTERM for 15s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$run_dir/$name.pid"
    log "stopped splitlet-$name (pid $pid)"
    stopped=$((stopped + 1))
  done
  [ "$stopped" -gt 0 ] || log "nothing was running under $run_dir"
}

any_running() {
  local name
  for name in "${components[@]}"; do
    if pid_alive "$name"; then return 0; fi
  done
  return 1
}

# http_ok URL: the URL answers 2xx.
http_ok() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }

# grpc_serving URL: gRPC health (grpc.health.v1.Health/Check, asked with
# Connect's JSON protocol) says SERVING.
grpc_serving() {
  local out
  out=$(curl -fsS --max-time 2 -H 'Content-Type: application/json' -d '{}' \
    "$1/grpc.health.v1.Health/Check" 2>/dev/null) || return 1
  [[ $out == *SERVING\"* ]] && [[ $out != *NOT_SERVING* ]]
}

# wait_healthy NAME CHECK...: poll CHECK for up to 30s until it succeeds,
# failing at once if the process died (with the end of its log).
wait_healthy() {
  local name=$1 deadline=$((SECONDS + 30))
  shift
  while [ "$SECONDS" -lt "$deadline" ]; do
    if ! pid_alive "$name"; then
      log "splitlet-$name exited; the end of $run_dir/$name.log:"
      tail -n 30 "$run_dir/$name.log" >&2 || true
      return 1
    fi
    if "$@"; then
      log "splitlet-$name is healthy"
      return 0
    fi
    sleep 0.2
  done
  log "splitlet-$name did not become healthy in 30s; see $run_dir/$name.log"
  return 1
}

# gateway_healthy: the CRI socket exists and /healthz answers.
gateway_healthy() { [ -S "$gateway_sock" ] && http_ok "http://$gateway_metrics/healthz"; }

# start NAME ARGS...: run bin/splitlet-NAME in its own session (so a Ctrl-C
# in the terminal reaches only this script, which stops the stack in order),
# logging to $run_dir/NAME.log.
start() {
  local name=$1
  shift
  setsid "$bin/splitlet-$name" "$@" >"$run_dir/$name.log" 2>&1 </dev/null &
  local pid=$! i
  echo "$pid" >"$run_dir/$name.pid"
  # Until the forked shell has exec'd the binary, pid_alive would take it
  # for a recycled pid.
  for ((i = 0; i < 50; i++)); do
    pid_alive "$name" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  log "started splitlet-$name (pid $pid), log $run_dir/$name.log"
}

# port_free ADDR: nothing listens on ADDR's port yet.
port_free() {
  ! (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null
}

case "${1:-start}" in
  stop)
    stop_stack
    exit 0
    ;;
  status)
    for name in "${components[@]}"; do
      if pid_alive "$name"; then
        echo "splitlet-$name: running (pid $(<"$run_dir/$name.pid"))"
      else
        echo "splitlet-$name: stopped"
      fi
    done
    [ -f "$run_dir/env" ] && cat "$run_dir/env"
    exit 0
    ;;
  start) ;;
  *) die "usage: hack/run.sh [start|stop|status]" ;;
esac

command -v curl >/dev/null || die "curl is needed for the health checks (apt-get install curl)"
command -v setsid >/dev/null || die "setsid (util-linux) is needed"

if any_running; then
  die "a stack already runs under $run_dir; stop it first: hack/run.sh stop (or make stop)"
fi
for addr in "$sync_addr" "$admission_addr" "$gateway_metrics"; do
  port_free "$addr" || die "$addr is already in use; set RUN_SYNC_ADDR, RUN_ADMISSION_ADDR or RUN_GATEWAY_METRICS_ADDR"
done

if [ "${RUN_NO_BUILD:-}" != 1 ]; then
  log "make build"
  make -C "$root" build >&2
fi

# A fresh directory each time: the fake backend forgets its containers on
# exit, so pods kept in sync's store would only be created again.
# Only what this script makes is removed, so a RUN_DIR pointing somewhere
# unexpected loses nothing else.
mkdir -p "$run_dir"
rm -rf "${run_dir:?}"/{state,logs,admission,manifests,env,backend} "$run_dir"/*.log "$run_dir"/*.pid "$run_dir/gateway.sock"
mkdir -p "$run_dir"/{state,logs,admission,manifests}
# Static pods come from a copy, so stopping can remove them from a real
# runtime without touching examples/; edit the copy to see sync re-read it.
cp "$root"/examples/static/*.yaml "$run_dir/manifests/"
gateway_sock=$run_dir/gateway.sock
# unix socket paths are limited to 108 bytes; a deep checkout moves the
# socket to a short private directory.
if [ "${#gateway_sock}" -gt 100 ]; then
  sock_dir=$(mktemp -d "${TMPDIR:-/tmp}/splitlet-run.XXXXXX")
  gateway_sock=$sock_dir/gateway.sock
fi

smoke_rc=0
on_exit() {
  local rc=$?
  set +e
  if [ "${detached:-}" != 1 ]; then
    echo >&2
    stop_stack
  fi
  [ "$rc" -eq 0 ] || log "FAILED (exit $rc); logs are in $run_dir"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 0' INT
trap 'exit 143' TERM

# Addresses of this run, for `hack/run.sh status` and for a shell to source.
cat >"$run_dir/env" <<EOF
SPLITLET_SERVER=$server
CONTAINER_RUNTIME_ENDPOINT=unix://$gateway_sock
SPLITLET_ADMISSION=http://$admission_addr
SPLITLET_GATEWAY_METRICS=http://$gateway_metrics
EOF

# --- splitlet-gateway -------------------------------------------------------
gateway_args=(
  --socket="$gateway_sock"
  --metrics-addr="$gateway_metrics"
  # sync mounts emptyDir volumes and termination-message files from its
  # state directory; the gateway's host-path policy must allow it.
  --allowed-host-path="$run_dir/state"
  --log-format=json
)
if [ -n "$runtime_endpoint" ]; then
  backend=cri
  gateway_args+=(--backend=cri --runtime-endpoint="$runtime_endpoint")
  sock_path=${runtime_endpoint#unix://}
  if [ ! -w "$sock_path" ] && [ "$(id -u)" -ne 0 ]; then
    log "warning: $sock_path is not writable by $(id -un); containerd's socket usually needs root"
  fi
else
  backend=fake
  gateway_args+=(--backend=fake)
fi
echo "$backend" >"$run_dir/backend"
start gateway "${gateway_args[@]}"
wait_healthy gateway gateway_healthy

# --- splitlet-admission -----------------------------------------------------
# Node facts (cpu, memory, ephemeral storage, labels) are detected from this
# machine; only the paths are moved under the run directory.
cat >"$run_dir/admission/config.yaml" <<YAML
# Generated by hack/run.sh for the local stack.
listen: $admission_addr
gatewayEndpoint: unix://$gateway_sock
node:
  rootDir: $run_dir/state
eviction:
  nodeFsRoot: $run_dir/state
  imageFsRoot: $run_dir/state
YAML
start admission --config="$run_dir/admission/config.yaml" --node-name="$(hostname)"
wait_healthy admission grpc_serving "http://$admission_addr"

# --- splitlet-sync ----------------------------------------------------------
sync_args=(
  --runtime-endpoint="unix://$gateway_sock"
  --listen="$sync_addr"
  --state-dir="$run_dir/state"
  --pod-logs-root="$run_dir/logs"
  --manifest-dir="$run_dir/manifests"
  --node-name="$(hostname)"
)
# Host-network pods report the node's IPs as their own, as on a kubelet.
node_ip=$(hostname -I 2>/dev/null | awk '{print $1}') || node_ip=""
[ -z "$node_ip" ] || sync_args+=(--node-ip="$node_ip")
sync_args+=(--admission-endpoint="$admission_addr")
start sync "${sync_args[@]}"
wait_healthy sync http_ok "$server/healthz"

# --- the example pods -------------------------------------------------------
splitctl=("$bin/splitctl" --server="$server")
log "splitctl apply -f examples/*.yaml --wait (not busybox.yaml, the compose stack's pod; backend $backend)"
# busybox.yaml is the compose stack's pod; the examples below cover it.
apply_files=()
for f in "$root"/examples/*.yaml; do
  [ "$(basename "$f")" = busybox.yaml ] && continue
  apply_files+=(-f "$f")
done
if ! "${splitctl[@]}" apply "${apply_files[@]}" --wait --timeout="$wait_timeout" >&2; then
  smoke_rc=1
  log "the example pods did not all reach Running; the pods now:"
fi
# The static pod comes from the manifest directory, not from apply; give
# its first sync a moment so the listing shows it.
# has_static_pod: the listing holds the static pod (captured, not piped into
# grep -q, whose early exit would fail the pipe under pipefail).
has_static_pod() {
  local names
  names=$("${splitctl[@]}" get pods -o name 2>/dev/null) || return 1
  [[ $names == *pod/static-web-* ]]
}
for ((i = 0; i < 50; i++)); do
  has_static_pod && break
  sleep 0.2
done
echo
"${splitctl[@]}" get pods -o wide
echo

if [ "${RUN_SMOKE:-}" = 1 ]; then
  if ! has_static_pod; then
    log "the static pod from examples/static/ never appeared"
    smoke_rc=1
  fi
  if [ "$smoke_rc" -eq 0 ]; then log "smoke: OK"; else log "smoke: FAILED"; fi
  exit "$smoke_rc"
fi

# rel PATH: PATH relative to the working directory when it lies below it.
rel() { if [[ $1 == "$PWD"/* ]]; then echo "${1#"$PWD"/}"; else echo "$1"; fi; }
crictl=crictl
# shellcheck source=hack/lib/cache.sh
source "$root/hack/lib/cache.sh"
[ -x "$CRI_TOOLS_DIR/crictl" ] && crictl=$CRI_TOOLS_DIR/crictl
rel_bin=$(rel "$bin")
rel_run=$(rel "$run_dir")
admission_hint="
  # a pod admission rejects (OutOfmemory), and admission's decisions:
  $rel_bin/splitctl apply -f examples/admission/too-big.yaml; $rel_bin/splitctl get pod too-big
  curl -s http://$admission_addr/metrics | grep '^admission_admit_total'
"
stop_hint="Ctrl-C"
[ "${RUN_DETACH:-}" = 1 ] && stop_hint="make stop   (or hack/run.sh stop)"
cat <<EOF
splitlet runs (backend: $backend, sync admits through admission).
Logs: $rel_run/{gateway,admission,sync}.log   container logs: $rel_run/logs/
Static pods: $rel_run/manifests/ (a copy of examples/static/; sync re-reads it on change)

Try next:
  set -a; . $rel_run/env; set +a        # SPLITLET_SERVER=$server and the others
  $rel_bin/splitctl get pods -w                      # watch: crashloop restarts, job completes
  $rel_bin/splitctl describe pod crashloop           # Back-off restarting failed container
  $rel_bin/splitctl logs web                         # the container's CRI log
  $rel_bin/splitctl logs init-demo -c wait-config    # an init container's log
  $rel_bin/splitctl exec web -- echo hello
  $rel_bin/splitctl events
  $rel_bin/splitctl delete pod web
  $rel_bin/splitctl apply -f examples/web.yaml --wait

  # the PodService with Connect's JSON protocol:
  curl -s -H 'Content-Type: application/json' -d '{"namespace":"default","name":"web"}' \\
    $server/splitlet.pod.v1.PodService/Get
  curl -s -H 'Content-Type: application/json' -d '{"namespace":"default"}' \\
    $server/splitlet.pod.v1.PodService/List

  # CRI, as sync sees it (make critest builds crictl into $SPLITLET_CACHE):
  $crictl --runtime-endpoint unix://$gateway_sock ps -a
  curl -s http://$gateway_metrics/metrics | grep splitlet_gateway_runtime_operations_total

  # admission's gRPC health over Connect JSON, and sync's kubelet metrics:
  curl -s -H 'Content-Type: application/json' -d '{}' http://$admission_addr/grpc.health.v1.Health/Check
  curl -s $server/metrics | grep -E '^kubelet_running_(pods|containers)'
$admission_hint
Stop: $stop_hint
EOF

if [ "${RUN_DETACH:-}" = 1 ]; then
  detached=1
  exit 0
fi

# Foreground: wait until Ctrl-C, or until one of the processes dies.
while true; do
  for name in "${components[@]}"; do
    if ! pid_alive "$name"; then
      log "splitlet-$name exited; the end of $run_dir/$name.log:"
      tail -n 30 "$run_dir/$name.log" >&2 || true
      exit 1
    fi
  done
  sleep 1
done
