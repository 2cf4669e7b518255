#!/usr/bin/env bash
# make bench: the project's benchmarks, each printed with the command that ran it.
# Figures worth keeping go to BENCHMARKS.md with that command.
#   BENCH_CONTAINERD=0   skip the containerd comparisons (they need root)
#   BENCH_COUNT=N        repetitions of each Go benchmark (default 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
count=${BENCH_COUNT:-3}

run() { echo; echo "\$ $*"; "$@"; }

cd "$root/gateway"
echo "== gateway: added latency per unary CRI call, fake backend (p50-ns / p99-ns)"
run go test -run '^$' -bench 'PodSandboxStatus|ListContainers100' -benchtime 20000x -count "$count" ./bench/

echo "== fake backend: per-call cost at 100 vs 10,000 pods"
run go test -run '^$' -bench . -benchtime 200000x -count 1 ./backend/fake/

if [ -d "$root/services/admission/internal/pluginhost" ]; then
  echo "== admission: Admit through one out-of-process plugin, 110 active pods"
  (cd "$root/services/admission" && run go test -run '^$' -bench ChainAdmit110 -benchtime 5000x -count "$count" ./internal/pluginhost/)
fi

# The containerd comparisons: the gateway's added latency per CRI call, and
# pod start of BENCH_CONTAINERD_N busybox pods (default 20) through splitlet
# vs the same CRI calls issued directly (bench/cmd/splitlet-bench -runtime
# containerd; BENCH_CONTAINERD_ROUNDS rounds (even), default 4; JSON to
# BENCH_CONTAINERD_OUT, default _out/bench/containerd.json). They need root
# (a private containerd) and are skipped without it; the rest still runs.
if [ "${BENCH_CONTAINERD:-1}" != 0 ] && [ "$(id -u)" != 0 ]; then
  echo "== containerd comparisons skipped: they start a private containerd, which needs root"
elif [ "${BENCH_CONTAINERD:-1}" != 0 ]; then
  # shellcheck source=lib/containerd.sh
  source "$root/hack/lib/containerd.sh"
  work=$(mktemp -d /tmp/splitlet-bench.XXXXXX)
  trap 'containerd_stop; rm -rf "$work"' EXIT
  containerd_install
  "$root/hack/images.sh" "$work/images" >/dev/null
  containerd_start "$work/containerd"
  containerd_import "$work/images/pause.tar" "$work/images/busybox.tar" 2>/dev/null
  echo "== gateway: added latency in front of containerd $(containerd --version | awk '{print $3}')"
  SPLITLET_CONTAINERD_ENDPOINT="unix://$CONTAINERD_SOCK" \
    run go test -run '^$' -bench Containerd -benchtime 5000x -count "$count" ./bench/

  echo "== pod start on containerd: ${BENCH_CONTAINERD_N:-20} busybox pods through splitlet vs direct CRI calls"
  (cd "$root" && make build >/dev/null)
  ctr_out=${BENCH_CONTAINERD_OUT:-$root/_out/bench/containerd.json}
  mkdir -p "$(dirname "$ctr_out")"
  (cd "$root/bench" && run go run ./cmd/splitlet-bench -runtime containerd \
    -containerd-endpoint "unix://$CONTAINERD_SOCK" -bin "$root/bin" \
    -n "${BENCH_CONTAINERD_N:-20}" -rounds "${BENCH_CONTAINERD_ROUNDS:-4}" -out "$ctr_out")
  containerd_stop
fi

# The pod-start harness (bench/cmd/splitlet-bench): splitlet's three processes
# on the fake backend, and the real kubelet beside them when KUBELET names a
# kubelet binary (see bench/README.md for building one from the module proxy).
#   BENCH_PODS=0            skip it
#   BENCH_N=110,1000,5000   pod counts;  BENCH_STEADY=60s   steady-state window
#   BENCH_FLAGS="..."       more flags (-latency 1ms, -concurrency 1, -batch 100, ...)
#   BENCH_OUT=FILE          JSON results (default _out/bench/results.json)
if [ "${BENCH_PODS:-1}" != 0 ]; then
  echo "== pod start: Apply to running, steady state, deletion (fake backend)"
  (cd "$root" && make build >/dev/null)
  out=${BENCH_OUT:-$root/_out/bench/results.json}
  mkdir -p "$(dirname "$out")"
  kubelet_flags=()
  if [ -n "${KUBELET:-}" ]; then kubelet_flags=(-kubelet "$KUBELET" -kubelet-n "${KUBELET_N:-110}"); fi
  # shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
  (cd "$root/bench" && run go run ./cmd/splitlet-bench -bin "$root/bin" -n "${BENCH_N:-110,1000,5000}" \
    -steady "${BENCH_STEADY:-60s}" -out "$out" ${BENCH_FLAGS:-} "${kubelet_flags[@]}")
fi
