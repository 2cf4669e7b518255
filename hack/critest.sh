#!/usr/bin/env bash
# `make critest`: run cri-tools' critest against containerd directly and then
# through splitlet-gateway (cri backend) in front of an identical containerd,
# print both pass/fail lists and the counts, and fail when a spec passes directly
# but not through the gateway. Needs root; installs what it needs from Debian.
#
# Images: critest always pulls. A local registry (hack/lib/registry.sh, on
# $CRITEST_REGISTRY) serves the images gateway/test/critestimages builds from
# busybox-static, and containerd mirrors registry.k8s.io and gcr.io to it.
#
# Environment:
#   CRITEST_REGISTRY   registry address (default 127.0.0.1:5000)
#   CRITEST_FOCUS      extra ginkgo focus regex (default: every spec)
#   CRITEST_SKIP       ginkgo skip regex (default: none; benchmarks are a
#                      separate suite critest only runs with -benchmark)
#   CRITEST_ONLY       "containerd" or "gateway" to run one side only (debugging)
#   CRITEST_GATEWAY_ARGS  extra gateway flags, appended (the last of a flag wins:
#                      --allow-host-pid=false shows the parity check failing)
#   CRITEST_KEEP=1     keep the work directory (containerd state, registry data)
#
# Output: _out/critest/{summary.txt,containerd.json,gateway.json,*.log}.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=hack/lib/containerd.sh
source hack/lib/containerd.sh
# critest needs pod networking (pod IPs, port mappings): a CNI bridge.
export CONTAINERD_WITH_CNI=1

# shellcheck source=hack/lib/cache.sh
source hack/lib/cache.sh
# shellcheck source=hack/lib/registry.sh
source hack/lib/registry.sh
# crictl and critest, built once per version outside the clone.
TOOLS=$CRI_TOOLS_DIR
OUT=$ROOT/_out/critest
REGISTRY=${CRITEST_REGISTRY:-127.0.0.1:5000}
WORK=$(mktemp -d /tmp/splitlet-critest.XXXXXX)
GATEWAY_PID=""

log() { echo "[critest] $*" >&2; }

cleanup() {
  local rc=$?
  set +e
  if [ -n "$GATEWAY_PID" ]; then kill "$GATEWAY_PID" 2>/dev/null; wait "$GATEWAY_PID" 2>/dev/null; fi
  containerd_stop
  registry_stop
  if [ "${CRITEST_KEEP:-}" = 1 ]; then
    log "kept $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

install_packages() {
  local missing=()
  command -v jq >/dev/null || missing+=(jq)
  command -v ipcmk >/dev/null || missing+=(util-linux) # critest's HostIpc specs
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} from Debian"
    _apt_install "${missing[@]}"
  fi
  containerd_install
  registry_build
}

push_images() {
  (cd gateway &&
    go build -o "$OUT/critestimages" ./test/critestimages &&
    CGO_ENABLED=0 go build -ldflags='-s -w' -o "$OUT/standin" ./test/critestimages/standin)
  "$OUT/critestimages" -list >"$OUT/images.txt"
  "$OUT/critestimages" -busybox /bin/busybox -standin "$OUT/standin" -registry "$REGISTRY" 2>"$OUT/push.log" ||
    { cat "$OUT/push.log" >&2; return 1; }
  log "pushed $(grep -c '^built' "$OUT/images.txt") image references to $REGISTRY"
}

# The mirrors, appended under the CRI plugin's config by containerd_start.
write_mirrors() {
  containerd_mirrors "$WORK/mirrors.toml" "$WORK/registry-hosts" "$REGISTRY" registry.k8s.io gcr.io
}

# run_critest NAME ENDPOINT: one full critest run, its JSON report in $OUT/NAME.json.
run_critest() {
  local name=$1 endpoint=$2 args=()
  args=(--runtime-endpoint "$endpoint" --image-endpoint "$endpoint"
    --ginkgo.no-color --ginkgo.json-report "$OUT/$name.json")
  [ -n "${CRITEST_FOCUS:-}" ] && args+=(--ginkgo.focus "$CRITEST_FOCUS")
  [ -n "${CRITEST_SKIP:-}" ] && args+=(--ginkgo.skip "$CRITEST_SKIP")
  log "running critest against $name ($endpoint); log $OUT/critest-$name.log"
  local start=$SECONDS
  # critest's HostIpc specs create 1 MiB SysV segments on the host with ipcmk
  # and never remove them; remove the ones that appeared during the run.
  local shm_before
  shm_before=$(shm_ids)
  # critest exits non-zero when any spec fails; the report is what we judge.
  (cd "$WORK" && "$TOOLS/critest" "${args[@]}") >"$OUT/critest-$name.log" 2>&1 || true
  local id
  for id in $(comm -13 <(echo "$shm_before") <(shm_ids)); do ipcrm -m "$id" 2>/dev/null || true; done
  log "critest against $name took $((SECONDS - start)) s"
  [ -s "$OUT/$name.json" ] || { tail -50 "$OUT/critest-$name.log" >&2; log "no report from $name"; return 1; }
  # One line per It spec: STATE<TAB>full spec text.
  jq -r '.[].SpecReports[]? | select(.LeafNodeType == "It")
         | "\(.State)\t\((.ContainerHierarchyTexts + [.LeafNodeText]) | join(" "))"' \
    "$OUT/$name.json" | sort -t$'\t' -k2 >"$OUT/$name.tsv"
}

# shm_ids lists the host's unattached 1 MiB SysV shared memory segments, sorted.
shm_ids() { awk 'NR > 1 && $4 == 1048576 && $7 == 0 {print $2}' /proc/sysvipc/shm | sort; }

# fresh_containerd NAME: a containerd of its own per run, so no run inherits the
# other's pulled images or leftovers.
fresh_containerd() {
  containerd_stop
  containerd_start "$WORK/containerd-$1" "$WORK/mirrors.toml"
  cp "$CONTAINERD_DIR/config.toml" "$OUT/containerd-$1.toml"
}

start_gateway() {
  local sock=$WORK/gateway.sock extra=()
  read -ra extra <<<"${CRITEST_GATEWAY_ARGS:-}"
  # Parity is the point: the gateway must allow everything containerd allows.
  "$ROOT/bin/splitlet-gateway" --backend=cri --runtime-endpoint="unix://$CONTAINERD_SOCK" \
    --socket="$sock" --allow-host-network --allow-privileged --allow-host-pid \
    --allow-host-ipc --allowed-host-path=/ --allowed-capability="*" --metrics-addr="" --log-level=debug \
    "${extra[@]}" \
    >"$OUT/gateway.log" 2>&1 &
  GATEWAY_PID=$!
  for _ in $(seq 1 100); do
    if [ -S "$sock" ] && "$TOOLS/crictl" --runtime-endpoint "unix://$sock" version >/dev/null 2>&1; then
      log "gateway ready on $sock (pid $GATEWAY_PID)"
      GATEWAY_SOCK=$sock
      return 0
    fi
    kill -0 "$GATEWAY_PID" 2>/dev/null || { cat "$OUT/gateway.log" >&2; return 1; }
    sleep 0.1
  done
  log "gateway did not answer on $sock"; tail -20 "$OUT/gateway.log" >&2
  return 1
}

list_state() { awk -F'\t' -v s="$2" '$1 == s {print $2}' "$OUT/$1.tsv"; }

summarize() {
  local f=$OUT/summary.txt both=0
  [ -s "$OUT/containerd.tsv" ] && [ -s "$OUT/gateway.tsv" ] && both=1
  {
    echo "critest $CRI_TOOLS_VERSION, containerd $(containerd --version | awk '{print $3}'), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    local side
    for side in containerd gateway; do
      [ -s "$OUT/$side.tsv" ] || continue
      # Not "N passed, N failed": CI reads that shape as a test runner's verdict,
      # and the verdict of this script is its exit status (parity), not these counts.
      echo "== $side: specs passed $(list_state "$side" passed | wc -l); failed $(list_state "$side" failed | wc -l);" \
        "skipped/other $(awk -F'\t' '$1 != "passed" && $1 != "failed"' "$OUT/$side.tsv" | wc -l);" \
        "total $(wc -l <"$OUT/$side.tsv")"
      echo "-- passed"; list_state "$side" passed | sed 's/^/  /'
      echo "-- failed"; list_state "$side" failed | sed 's/^/  /'
      echo
    done
    if [ "$both" = 1 ]; then
      echo "== passed against containerd but not through the gateway:"
      comm -23 <(list_state containerd passed | sort) <(list_state gateway passed | sort) | sed 's/^/  /'
      echo "== passed through the gateway but not against containerd:"
      comm -13 <(list_state containerd passed | sort) <(list_state gateway passed | sort) | sed 's/^/  /'
      echo
    fi
    echo "== images that could not be built locally (specs using them fail on both sides):"
    awk -F'\t' '$1 == "missing" {print "  " $2 ": " $3}' "$OUT/images.txt"
    echo "== known failures on both sides, not images:"
    echo "  MaskedPaths: Debian's busybox-static runs applets in-process (sh standalone), so 'sh -c ls' never"
    echo "  executes the masked /bin/ls and gets no 'Permission denied'."
  } >"$f"
  cat "$f"
}

main() {
  mkdir -p "$OUT"
  rm -f "$OUT"/*.json "$OUT"/*.tsv "$OUT"/summary.txt
  local t0=$SECONDS
  install_packages
  critools_build
  if [ "${CRITEST_ONLY:-}" != containerd ]; then
    log "building splitlet-gateway"
    make -s build
  fi
  registry_serve "$WORK/registry" "$REGISTRY"
  log "registry ready on $REGISTRY (pid $REGISTRY_PID)"
  push_images
  write_mirrors

  if [ "${CRITEST_ONLY:-}" != gateway ]; then
    fresh_containerd direct
    run_critest containerd "unix://$CONTAINERD_SOCK"
    cp "$CONTAINERD_LOG" "$OUT/containerd-direct.log"
  fi
  if [ "${CRITEST_ONLY:-}" != containerd ]; then
    fresh_containerd gateway
    start_gateway
    run_critest gateway "unix://$GATEWAY_SOCK"
    cp "$CONTAINERD_LOG" "$OUT/containerd-gateway.log"
  fi

  summarize
  log "total $((SECONDS - t0)) s"
  if [ -s "$OUT/containerd.tsv" ] && [ -s "$OUT/gateway.tsv" ]; then
    local regressions
    regressions=$(comm -23 <(list_state containerd passed | sort) <(list_state gateway passed | sort) | wc -l)
    if [ "$regressions" -gt 0 ]; then
      log "FAIL: $regressions spec(s) pass against containerd but not through the gateway"
      return 1
    fi
    log "OK: every spec that passes against containerd passes through the gateway"
  fi
}

main "$@"
