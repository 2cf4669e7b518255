#!/usr/bin/env bash
# make bench: the project's benchmarks, each printed with the command that ran it.
# Figures worth keeping go to BENCHMARKS.md with that command.
#   BENCH_CONTAINERD=0   skip the containerd comparisons (they need root)
#   BENCH_COUNT=N        repetitions of each Go benchmark (default 3)
#   BENCH_CONTAINERD_SANDBOXES=N
#                        sandboxes run in containerd before BenchmarkContainerd,
#                        for ListPodSandbox to list (default 30)
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
  # Debian's containerd unless asked: BENCHMARKS.md's figures were measured
  # on it (CONTAINERD_VERSION=v2.x.y measures on a 2.x build, untested here).
  CONTAINERD_VERSION=${CONTAINERD_VERSION:-debian}
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
    SPLITLET_BENCH_CONTAINERD_SANDBOXES="${BENCH_CONTAINERD_SANDBOXES:-30}" \
    run go test -run '^$' -bench Containerd -benchtime 5000x -count "$count" ./bench/

  echo "== streams through the gateway's proxy vs straight to containerd's streaming server (and the fake's)"
  SPLITLET_CONTAINERD_ENDPOINT="unix://$CONTAINERD_SOCK" \
    run go test -run '^$' -bench Streams -benchtime 200x -count "$count" ./bench/

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
# on the fake backend, and the real kubelet v1.36.3 beside them at 110 and
# 1000 pods (see bench/README.md for building one from the module proxy;
# hack/lib/kube.sh caches it). As root, both run in the harness's node
# network (-node-net private: a node IP, a default route, a hostname that
# resolves), without root in this machine's own network, where the kubelet's
# figures depend on the machine's resolver (BENCHMARKS.md, issue 24).
#   BENCH_PODS=0            skip it
#   BENCH_N=110,1000,5000   pod counts;  BENCH_STEADY=60s   steady-state window
#   KUBELET=PATH            the kubelet (default: the cached v1.36.3 build
#                           if there); KUBELET=none skips it
#   KUBELET_N=110,1000      the kubelet's pod counts
#   BENCH_FLAGS="..."       more flags (-latency 1ms, -concurrency 1, -batch 100, ...)
#   BENCH_OUT=FILE          JSON results (default _out/bench/results.json)
if [ "${BENCH_PODS:-1}" != 0 ]; then
  echo "== pod start: Apply to running, steady state, deletion (fake backend)"
  (cd "$root" && make build >/dev/null)
  out=${BENCH_OUT:-$root/_out/bench/results.json}
  mkdir -p "$(dirname "$out")"
  # shellcheck source=lib/cache.sh
  source "$root/hack/lib/cache.sh"
  kubelet=${KUBELET:-$SPLITLET_CACHE/kubernetes-v1.36.3/bin/kubelet}
  kubelet_flags=()
  if [ "$kubelet" != none ] && [ -x "$kubelet" ]; then
    kubelet_flags=(-kubelet "$kubelet" -kubelet-n "${KUBELET_N:-110,1000}")
  elif [ "$kubelet" != none ]; then
    echo "== no kubelet at $kubelet: the kubelet rows are skipped (build it: source hack/lib/kube.sh; kube_build kubelet)"
  fi
  net_flags=()
  if [ "$(id -u)" != 0 ]; then
    echo "== not root: the pod-start bench runs in this machine's own network (-node-net host)"
    net_flags=(-node-net host)
  fi
  # shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
  (cd "$root/bench" && run go run ./cmd/splitlet-bench -bin "$root/bin" -n "${BENCH_N:-110,1000,5000}" \
    -steady "${BENCH_STEADY:-60s}" -out "$out" "${net_flags[@]}" ${BENCH_FLAGS:-} "${kubelet_flags[@]}")
fi
