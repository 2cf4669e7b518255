#!/usr/bin/env bash
# Stage the root filesystem of the splitlet/containerd image into
# OUTDIR/rootfs (default bin/containerd-image, inside the docker build context
# and ignored by git), from this machine's Debian packages:
#   - containerd, containerd-shim-runc-v2, ctr and runc, each with the shared
#     libraries ldd lists (libc, the loader, libseccomp for runc), copied at
#     the same paths;
#   - Debian's static busybox with a symlink per applet, for the entrypoint;
#   - the pause and busybox OCI tarballs hack/images.sh builds, in /images,
#     imported by the entrypoint at start (no registry is reachable).
# deploy/images/Dockerfile.containerd then copies the rootfs into a scratch
# image. Copying binaries was chosen over a debootstrap'ed Debian root
# (`debootstrap --variant=minbase --include=containerd,runc bookworm` then
# `docker import`): measured here, staging takes about 6 s (most of it
# hack/images.sh's Go builds) for a 98 MB image, against 33 s of debootstrap
# plus 4 s of import for a 337 MB image, holding the same Debian binaries.
#
#   deploy/images/stage-containerd.sh [OUTDIR]
#
# Installs containerd, runc and busybox-static from Debian if absent.
# The containerd the tests default to (hack/lib/containerd.sh: 2.4.2, built
# once from the module proxy); the entrypoint writes a version 2 config,
# which 2.x migrates. CONTAINERD_VERSION=debian stages Debian's 1.6 instead.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bin/containerd-image}
log() { echo "[stage-containerd] $*" >&2; }

# shellcheck source-path=SCRIPTDIR source=../../hack/lib/containerd.sh
source "$root/hack/lib/containerd.sh"
containerd_install

rootfs=$out/rootfs
rm -rf "$rootfs"
mkdir -p "$rootfs"/{bin,usr/local/bin,images,etc,var/lib/containerd,run}
install -d -m 1777 "$rootfs/tmp"

# copy_with_libs BIN DEST: BIN at DEST and every library ldd resolves, at the
# library's own path (Debian's merged /usr means /lib is fine for the loader).
copy_with_libs() {
  local bin=$1 dest=$2 lib
  install -m 0755 "$(readlink -f "$bin")" "$rootfs$dest"
  # ldd prints "name => /path (addr)" for libraries and "/path (addr)" for the loader.
  for lib in $(ldd "$bin" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    if [ ! -e "$rootfs$lib" ]; then
      mkdir -p "$rootfs$(dirname "$lib")"
      cp -L "$lib" "$rootfs$lib"
    fi
  done
}

for b in containerd containerd-shim-runc-v2 ctr runc; do
  copy_with_libs "$(command -v "$b")" "/usr/local/bin/$b"
done

install -m 0755 /bin/busybox "$rootfs/bin/busybox"
for a in $(/bin/busybox --list); do
  [ "$a" = busybox ] || ln -sf busybox "$rootfs/bin/$a"
done

install -m 0755 "$root/deploy/images/containerd/entrypoint.sh" "$rootfs/entrypoint.sh"

images=$out/images-build
"$root/hack/images.sh" "$images"
cp "$images/pause.tar" "$images/busybox.tar" "$rootfs/images/"

log "staged $rootfs ($(du -sh "$rootfs" | cut -f1)): $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1 {print $3}')"
