# shellcheck shell=bash
# The container image registry of distribution/distribution, built from the
# Go module proxy and cached outside the clone (hack/lib/cache.sh). The
# pull-secret test of `make apiserver-e2e` runs it with a login. Source this
# file.
#
#   registry_build   build $REGISTRY_BIN unless it is there already
#
# Environment:
#   REGISTRY_VERSION  github.com/distribution/distribution/v3 version
#                     (default v3.1.2, the newest the proxy served)

# shellcheck source-path=SCRIPTDIR source=cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
REGISTRY_BIN=$SPLITLET_CACHE/registry-$REGISTRY_VERSION/registry

registry_build() {
	[[ -x $REGISTRY_BIN ]] && return
	printf 'registry.sh: building distribution registry %s (a few minutes, once)\n' "$REGISTRY_VERSION" >&2
	# Into a temporary name first: an interrupted build leaves no binary
	# that looks complete.
	local dir tmp
	dir=$(dirname "$REGISTRY_BIN")
	mkdir -p "$dir"
	tmp=$(mktemp -d "$dir/build.XXXXXX")
	(cd "$tmp" && GOWORK=off GOBIN=$tmp go install "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION")
	mv "$tmp/registry" "$REGISTRY_BIN"
	rm -rf "$tmp"
}
