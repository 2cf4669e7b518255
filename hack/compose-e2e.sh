#!/usr/bin/env bash
# End-to-end test of the docker-compose stack on a real containerd. This script
# provides what the test needs: it installs docker.io and docker-compose from
# Debian if absent, starts a private dockerd (hack/lib/docker.sh), runs `make
# build`, builds the images with no registry (deploy/images/build.sh, which runs
# hack/images.sh), picks free host ports and writes a fresh API token. The test
# itself is Go, services/sync/test/compose (TestComposeStack), run with
# `go test` once for each compose CLI present (docker-compose 1.29 always;
# `docker compose` v2 when its plugin is installed, which Debian's docker.io
# does not ship, or built into _out/compose-v2 as deploy/images/README.md
# shows):
#   compose up -d; wait for health; check the gateway serves CRI from
#   containerd on the shared socket; splitctl without the token is refused;
#   `splitctl apply -f examples/busybox.yaml`; wait until the pod is Running;
#   `splitctl logs` shows its line; the container is in containerd;
#   `splitctl exec -i` streams through the gateway with the exit code carried
#   back; `splitctl delete pod`; it is gone from sync and from containerd;
#   compose down -v. On failure the test prints compose ps and the services'
#   logs. Its output is also kept in _out/compose/go-test-<cli>.log.
# On exit the dockerd it started is stopped (and, after a failure, the stack
# removed in case the test could not); the phases' timings are printed.
#
# Must run as root. Environment:
#   SPLITLET_DOCKER_DIR     dockerd's data/exec root and socket (default
#                           /var/tmp/splitlet-docker; kept between runs so the
#                           build cache makes a warm run fast)
#   SPLITLET_COMPOSE_REQUIRE_SYNC=1  fail, instead of stopping with exit 0 after
#                           the gateway check, when bin/splitlet-sync or
#                           bin/splitctl was not built
#   SPLITLET_COMPOSE_SKIP_SYNC=1  stop after the gateway check as if sync had
#                           not landed (a quick check of the containerd image)
#   SPLITLET_COMPOSE_V2     a compose v2 binary to test as `docker compose`
#                           when no plugin is installed (default
#                           _out/compose-v2/docker-compose, if built)
#   SPLITLET_CRICTL         crictl for the gateway check (default
#                           crictl that hack/critest.sh caches in $SPLITLET_CACHE, then
#                           PATH); "none" uses the gateway's e2e policy test
#   SPLITLET_COMPOSE_KEEP=1 leave dockerd, and a stack a failure interrupted,
#                           running for inspection
#   SPLITLET_SYNC_PORT, SPLITLET_ADMISSION_PORT, SPLITLET_GATEWAY_METRICS_PORT,
#   SPLITLET_GATEWAY_STREAMING_PORT
#                           host ports (default: 7443, 7444, 9101, 10010, or
#                           the next free port when something else holds one)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { echo "[compose-e2e] $(date -u +%H:%M:%S) $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root: it installs packages with apt-get and runs dockerd"
  exit 1
fi

# shellcheck source-path=SCRIPTDIR source=lib/docker.sh
source "$root/hack/lib/docker.sh"
# shellcheck source-path=SCRIPTDIR source=lib/cache.sh
source "$root/hack/lib/cache.sh"

# The Go test's compose project (services/sync/test/compose).
project=splitlet-e2e
out_dir=$root/_out/compose
tested=""
timings=()
t_start=$SECONDS
t_phase=$SECONDS

# phase NAME records how long the step that just ended took.
phase() {
  timings+=("$(printf '%-32s %4ds' "$1" $((SECONDS - t_phase)))")
  t_phase=$SECONDS
}

compose() { docker_compose -p "$project" -f "$root/docker-compose.yml" "$@"; }

# free_port PREFERRED prints PREFERRED when nothing listens on it, else the
# first free port above 20000+PREFERRED%1000 (other splitlet processes on
# this machine may hold the defaults).
free_port() {
  local p=$1
  if [ -z "$(ss -Htln "sport = :$p")" ]; then echo "$p"; return; fi
  p=$((20000 + $1 % 1000))
  while [ -n "$(ss -Htln "sport = :$p")" ]; do p=$((p + 1)); done
  echo "$p"
}

cleanup() {
  local rc=$?
  set +e
  if [ "$rc" -ne 0 ]; then
    log "FAILED (exit $rc)"
    if [ -n "${DOCKER_LOG:-}" ] && [ -s "$DOCKER_LOG" ]; then
      log "---- dockerd log (last 30 lines) ----"; tail -n 30 "$DOCKER_LOG" >&2
    fi
  fi
  if [ "${SPLITLET_COMPOSE_KEEP:-}" = 1 ]; then
    log "kept dockerd on ${DOCKER_HOST:-?} (and the stack of a failed test, project $project)"
  else
    # The test removes its stack itself, unless it was killed (go test's
    # -timeout, a signal) before its cleanup ran.
    [ "$rc" -ne 0 ] && [ -n "$tested" ] &&
      DOCKER_COMPOSE_CLI=v1 compose down -v --remove-orphans >/dev/null 2>&1
    docker_stop
  fi
  exit "$rc"
}
trap cleanup EXIT
# A signal ends the script through the EXIT trap, so cleanup runs once.
trap 'exit 130' INT
trap 'exit 143' TERM

# run_test CLI runs the Go test with docker-compose ("v1") or docker compose
# ("v2") and adds its phases' timings to ours.
run_test() {
  local cli=$1 log_file=$out_dir/go-test-$1.log timings_file=$out_dir/timings-$1
  rm -f "$timings_file"
  log "== compose $cli: go test ./test/compose/ (services/sync), output also in ${log_file#"$root"/}"
  tested=1
  (cd "$root/services/sync" &&
    DOCKER_COMPOSE_CLI=$cli SPLITLET_COMPOSE_E2E=1 SPLITLET_COMPOSE_TIMINGS=$timings_file \
      go test -count=1 -v -timeout=15m -run '^TestComposeStack$' ./test/compose/) 2>&1 | tee "$log_file"
  # A skip would also exit 0: insist on the pass line.
  grep -q -- '--- PASS: TestComposeStack' "$log_file" || { log "TestComposeStack did not pass"; return 1; }
  phase "go test, compose $cli (total)"
  local line
  while read -r line; do timings+=("  $line"); done <"$timings_file"
}

log "installing docker.io and docker-compose if absent"
docker_install
phase "install"
docker_start "${SPLITLET_DOCKER_DIR:-/var/tmp/splitlet-docker}"
phase "dockerd start"

log "make build"
make -C "$root" build >/dev/null
sync_landed=1
missing=()
[ -x "$root/bin/splitlet-sync" ] || missing+=("bin/splitlet-sync was not built (services/sync/cmd/splitlet-sync);")
[ -x "$root/bin/splitctl" ] || missing+=("bin/splitctl was not built (splitctl/cmd/splitctl);")
if [ "${SPLITLET_COMPOSE_SKIP_SYNC:-}" = 1 ]; then
  missing+=("SPLITLET_COMPOSE_SKIP_SYNC=1 asked to stop after the gateway check;")
fi
[ ${#missing[@]} -eq 0 ] || sync_landed=0
phase "make build"

log "building the images (no registry)"
"$root/deploy/images/build.sh"
phase "images"

SPLITLET_SYNC_PORT=${SPLITLET_SYNC_PORT:-$(free_port 7443)}
SPLITLET_ADMISSION_PORT=${SPLITLET_ADMISSION_PORT:-$(free_port 7444)}
SPLITLET_GATEWAY_METRICS_PORT=${SPLITLET_GATEWAY_METRICS_PORT:-$(free_port 9101)}
SPLITLET_GATEWAY_STREAMING_PORT=${SPLITLET_GATEWAY_STREAMING_PORT:-$(free_port 10010)}
export SPLITLET_SYNC_PORT SPLITLET_ADMISSION_PORT SPLITLET_GATEWAY_METRICS_PORT SPLITLET_GATEWAY_STREAMING_PORT
# The API token sync and admission require (the compose file's secret); the
# test gives it to splitctl. A fresh one per run.
export SPLITLET_TOKEN_FILE=$out_dir/api.token
mkdir -p "$out_dir"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SPLITLET_TOKEN_FILE")
log "host ports: sync $SPLITLET_SYNC_PORT, admission $SPLITLET_ADMISSION_PORT, gateway metrics $SPLITLET_GATEWAY_METRICS_PORT, streams $SPLITLET_GATEWAY_STREAMING_PORT"
# A stack left by an interrupted run would hold the volumes and names.
DOCKER_COMPOSE_CLI=v1 compose down -v --remove-orphans >/dev/null 2>&1 || true

compose_v2=${SPLITLET_COMPOSE_V2:-$root/_out/compose-v2/docker-compose}
if ! docker_compose_v2_available && [ -x "$compose_v2" ]; then
  docker_add_compose_plugin "$compose_v2"
fi
clis=(v1)
if docker_compose_v2_available; then
  clis+=(v2)
else
  log "docker compose v2 is not installed (Debian's docker.io does not ship the plugin; see deploy/images/README.md to build one): testing docker-compose 1.29 only"
fi
# The test looks for crictl on PATH; the one hack/critest.sh caches comes first.
if [ -z "${SPLITLET_CRICTL:-}" ] && [ -x "$CRI_TOOLS_DIR/crictl" ]; then
  export SPLITLET_CRICTL=$CRI_TOOLS_DIR/crictl
fi
[ "$sync_landed" = 1 ] || export SPLITLET_COMPOSE_SKIP_SYNC=1
phase "ports, token, compose CLIs"

for cli in "${clis[@]}"; do
  run_test "$cli"
done

if [ "$sync_landed" != 1 ]; then
  # The lead asked for this switch: until sync and splitctl land, a run that
  # reaches the gateway passes unless the caller insists on the whole path.
  log "NOT RUN: the splitctl steps (apply, Running, logs, exec, delete): ${missing[*]}"
  if [ "${SPLITLET_COMPOSE_REQUIRE_SYNC:-}" = 1 ]; then
    log "SPLITLET_COMPOSE_REQUIRE_SYNC=1: failing"
    exit 1
  fi
fi

phase "rest"
log "timings:"
printf '  %s\n' "${timings[@]}" >&2
scope="up to the gateway check only"
[ "$sync_landed" = 1 ] && scope="whole path"
log "PASS in $((SECONDS - t_start))s (compose CLIs: ${clis[*]}; $scope)"
