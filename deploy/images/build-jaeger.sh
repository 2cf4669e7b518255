#!/usr/bin/env bash
# Build splitlet/jaeger:dev, the trace viewer of the compose stack's opt-in
# `tracing` profile: Jaeger v2 compiled from the Go module proxy into a
# static _out/jaeger/jaeger, then an image from it (Dockerfile.jaeger). Not
# part of build.sh: the default stack does not need it, and the build takes
# minutes (3 on the 2-core VM with the modules cached, 10 more to download
# them the first time).
#
#   deploy/images/build-jaeger.sh            # JAEGER_VERSION=v1.76.0 (Jaeger v2.x's Go module version)
#
# `go install ...@version` refuses the module (its go.mod has a replace
# directive), so the command is built inside a throwaway module that takes
# jaeger's own go.mod, replace included.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=${JAEGER_VERSION:-v1.76.0}
log() { echo "[jaeger] $*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mod=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "github.com/jaegertracing/jaeger@$version" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
sed 's|^module .*|module jaegerbuild|' "$mod" >"$work/go.mod"
echo "require github.com/jaegertracing/jaeger $version" >>"$work/go.mod"
out=$root/_out/jaeger
mkdir -p "$out"
log "building $out/jaeger ($version) from the module proxy"
(cd "$work" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$out/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
log "building splitlet/jaeger:dev"
docker build -f "$root/deploy/images/Dockerfile.jaeger" -t splitlet/jaeger:dev "$out"
