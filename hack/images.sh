#!/usr/bin/env bash
# Build the images splitlet's tests run, from files on this machine (no registry
# is reachable): OUTDIR/pause.tar and OUTDIR/busybox.tar, OCI image layout
# tarballs for `ctr -n k8s.io images import` (hack/lib/containerd.sh
# containerd_import). The pause image holds only a static Go pause binary
# (gateway/test/pause); the busybox image holds Debian's static busybox with a
# symlink per applet. Outputs are byte-for-byte reproducible, so running this
# again changes nothing and re-importing is a no-op.
#
#   hack/images.sh OUTDIR
#
# Environment: BUSYBOX (default /bin/busybox, from Debian's busybox-static),
# PAUSE_IMAGE (default registry.k8s.io/pause:3.10),
# BUSYBOX_IMAGES (default "docker.io/library/busybox:1.36 docker.io/library/busybox:latest"),
# PUSH_REGISTRY (HOST:PORT of a plain-HTTP registry: each image is pushed there
# too, under its names with the registry host replaced, as mkimage
# -push-registry does).
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
busybox=${BUSYBOX:-/bin/busybox}
pause_image=${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
push=()
if [ -n "${PUSH_REGISTRY:-}" ]; then push=(-push-registry "$PUSH_REGISTRY"); fi
read -r -a busybox_images <<<"${BUSYBOX_IMAGES:-docker.io/library/busybox:1.36 docker.io/library/busybox:latest}"

if [ ! -x "$busybox" ]; then
  echo "images.sh: $busybox not found: apt-get install busybox-static" >&2
  exit 1
fi

# Both binaries are static: the pause one goes into an otherwise empty image.
mkdir -p "$out/bin"
(cd "$root/gateway" &&
  CGO_ENABLED=0 go build -trimpath -o "$out/bin/pause" ./test/pause &&
  CGO_ENABLED=0 go build -trimpath -o "$out/bin/mkimage" ./test/mkimage)

"$out/bin/mkimage" -ref "$pause_image" -file "$out/bin/pause:/pause" \
  -entrypoint /pause "${push[@]}" -o "$out/pause.tar"

refs=()
for r in "${busybox_images[@]}"; do refs+=(-ref "$r"); done
"$out/bin/mkimage" "${refs[@]}" -busybox "$busybox" -cmd sh "${push[@]}" -o "$out/busybox.tar"

echo "images.sh: wrote $out/pause.tar ($pause_image) and $out/busybox.tar (${busybox_images[*]})" >&2
