#!/usr/bin/env bash
# bench-ab.sh BASE [HEAD]: the 1000-pod burst on the binaries of two commits,
# interleaved, to tell a change from this VM's noise.
#
# The same binaries on this 2-core VM give 2.1 to 4.4 s of sync CPU for the
# burst from one run to the next, minutes apart (BENCHMARKS.md, fourteenth
# session), far more than most changes move it. So the two builds run in
# turn, ABBA (A B, B A, A B, ...) so that neither always goes first, with
# BENCH_AB_REST seconds (default 20) of rest before every run, and the
# medians are compared. HEAD defaults to the working tree's commit.
#   BENCH_AB_ROUNDS   rounds of two runs (default 6)
#   BENCH_AB_N        pods per burst (default 1000)
#   BENCH_AB_OUT      where the builds, reports and summary go
#                     (default _out/bench-ab)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${1:?usage: hack/bench-ab.sh BASE [HEAD]}
head=${2:-HEAD}
rounds=${BENCH_AB_ROUNDS:-6}
n=${BENCH_AB_N:-1000}
rest=${BENCH_AB_REST:-20}
out=${BENCH_AB_OUT:-$root/_out/bench-ab}
mkdir -p "$out"

# build COMMIT DIR: make build of COMMIT in a worktree, binaries to DIR/bin.
build() {
  local commit=$1 dir=$2
  git -C "$root" worktree remove --force "$dir" 2>/dev/null || rm -rf "$dir"
  git -C "$root" worktree prune
  git -C "$root" worktree add -q --detach "$dir" "$commit"
  make -C "$dir" build >"$dir.build.log" 2>&1 || { tail -20 "$dir.build.log"; exit 1; }
}
trap 'git -C "$root" worktree remove --force "$out/A" 2>/dev/null; git -C "$root" worktree remove --force "$out/B" 2>/dev/null; true' EXIT
build "$base" "$out/A"
build "$head" "$out/B"
# Each side's own harness: its launcher passes the flags its binaries know.
for v in A B; do
  (cd "$out/$v/bench" && go build -o "$out/$v-bench" ./cmd/splitlet-bench)
done
echo "A = $(git -C "$root" rev-parse --short "$base"), B = $(git -C "$root" rev-parse --short "$head"), $rounds rounds of $n pods"

for r in $(seq 1 "$rounds"); do
  order="A B"
  [ $((r % 2)) = 0 ] && order="B A"
  for v in $order; do
    sleep "$rest"
    "$out/$v-bench" -bin "$out/$v/bin" -n "$n" -concurrency 32 -steady 5s -timeout 300s \
      -out "$out/$v$r.json" >"$out/$v$r.txt" 2>&1
  done
done

# The medians of each side: Watch p50 and p99, pods/s, burst CPU per process.
python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for v in "AB":
    runs = [json.load(open(f"{out}/{v}{r}.json"))["results"][0] for r in range(1, rounds + 1)]
    cpu = lambda run, p: run["burst_cpu_seconds"][p]
    rows[v] = {
        "Watch p50 ms": [x["start_watch"]["p50_ms"] for x in runs],
        "Watch p99 ms": [x["start_watch"]["p99_ms"] for x in runs],
        "pods/s": [x["pods_per_sec"] for x in runs],
        "sync CPU s": [cpu(x, "sync") for x in runs],
        "gateway CPU s": [cpu(x, "gateway") for x in runs],
        "admission CPU s": [cpu(x, "admission") for x in runs],
        "CPU per pod ms": [1000 * sum(x["burst_cpu_seconds"].values()) / x["start_watch"]["count"] for x in runs],
    }
print(f"{'median (min-max)':18} {'A':>24} {'B':>24}")
for k in rows["A"]:
    cell = lambda xs: f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"
    print(f"{k:18} {cell(rows['A'][k]):>24} {cell(rows['B'][k]):>24}")
EOF
