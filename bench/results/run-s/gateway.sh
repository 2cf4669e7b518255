#!/usr/bin/env bash
set -euo pipefail
root=$(git rev-parse --show-toplevel)
source "$root/hack/lib/containerd.sh"
work=$(mktemp -d /tmp/splitlet-gwb.XXXXXX)
trap 'containerd_stop; rm -rf "$work"' EXIT
containerd_install >/dev/null
"$root/hack/images.sh" "$work/images" >/dev/null
containerd_start "$work/containerd" >/dev/null 2>&1
containerd_import "$work/images/pause.tar" "$work/images/busybox.tar" >/dev/null 2>&1
containerd --version
cd "$root/gateway" && go test -c -o /tmp/gw.test ./bench/ && cd bench
for i in 1 2 3; do
  echo "== round $i $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  /tmp/gw.test -test.run '^$' -test.bench RoundTrip -test.benchtime 20000x | grep ^Benchmark
  SPLITLET_BENCH_CONTAINERD_SANDBOXES=30 SPLITLET_CONTAINERD_ENDPOINT=unix://$CONTAINERD_SOCK /tmp/gw.test -test.run '^$' \
    -test.bench 'Containerd/(Version|ListPodSandbox|PodSandboxStatus)/(direct|gateway-process)$' -test.benchtime 5000x | grep ^Benchmark
done
