#!/usr/bin/env bash
# Build the images of splitlet's compose stack with no registry and no pulls:
# splitlet/containerd, splitlet/gateway, splitlet/admission and splitlet/sync,
# all tagged :dev (docker-compose.yml names them). Needs a running Docker
# engine (DOCKER_HOST) and `make build`'s static binaries in bin/; stages the
# containerd image's root first (stage-containerd.sh).
#
#   deploy/images/build.sh
#
# The tag is fixed: docker-compose.yml names these images.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tag=dev
log() { echo "[images] $*" >&2; }

for b in splitlet-gateway splitlet-admission splitlet-plugin-image-allowlist; do
  if [ ! -x "$root/bin/$b" ]; then
    log "bin/$b is missing: run 'make build' first"
    exit 1
  fi
done
names=(containerd gateway admission sync)
# splitlet-sync is the newest binary; without it the rest of the stack still
# builds and runs (hack/compose-e2e.sh then stops at the gateway check).
if [ ! -x "$root/bin/splitlet-sync" ]; then
  log "bin/splitlet-sync is missing (services/sync/cmd/splitlet-sync): not building splitlet/sync:$tag"
  names=(containerd gateway admission)
fi

"$root/deploy/images/stage-containerd.sh" "$root/bin/containerd-image"

for name in "${names[@]}"; do
  log "building splitlet/$name:$tag"
  # The output only matters on failure (and a newer docker CLI without buildx
  # warns on every build that the legacy builder is deprecated).
  if ! docker build -f "$root/deploy/images/Dockerfile.$name" -t "splitlet/$name:$tag" "$root" \
       >"$root/bin/containerd-image/build-$name.log" 2>&1; then
    cat "$root/bin/containerd-image/build-$name.log" >&2
    exit 1
  fi
done
docker images --filter reference='splitlet/*' >&2
