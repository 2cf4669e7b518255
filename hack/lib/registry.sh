# shellcheck shell=bash
# The container image registry of distribution/distribution, built from the
# Go module proxy and cached outside the clone (hack/lib/cache.sh). The
# pull-secret test of `make apiserver-e2e` runs it with a login; `make critest`
# and `make conformance` serve their test images from it. Source this
# file.
#
#   registry_build   build $REGISTRY_BIN unless it is there already
#   registry_serve DIR ADDR  run it on plain-HTTP ADDR, data in DIR (REGISTRY_PID)
#   registry_stop    stop what registry_serve started
#
# Environment:
#   REGISTRY_VERSION  github.com/distribution/distribution/v3 version
#                     (default v3.1.2, the newest the proxy served)

# shellcheck source-path=SCRIPTDIR source=cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
REGISTRY_BIN=$SPLITLET_CACHE/registry-$REGISTRY_VERSION/registry

registry_build() {
	cache_ensure registry _registry_built _registry_build
}

_registry_built() { [[ -x $REGISTRY_BIN ]]; }

_registry_build() {
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

# registry_serve DIR ADDR: run $REGISTRY_BIN (built by registry_build) in the
# background on plain-HTTP ADDR (host:port) with its storage, config and log
# under DIR, and wait until it answers. Sets REGISTRY_PID; registry_stop ends
# it. Fails, showing the log, when something already listens on ADDR or the
# registry does not come up.
registry_serve() {
	local dir=$1 addr=$2
	if (exec 3<>"/dev/tcp/${addr%:*}/${addr#*:}") 2>/dev/null; then
		echo "registry.sh: something already listens on $addr" >&2
		return 1
	fi
	mkdir -p "$dir/data"
	cat >"$dir/config.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/data
http:
  addr: $addr
YAML
	"$REGISTRY_BIN" serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
	REGISTRY_PID=$!
	for _ in $(seq 1 100); do
		curl -fsS "http://$addr/v2/" >/dev/null 2>&1 && return 0
		if ! kill -0 "$REGISTRY_PID" 2>/dev/null; then
			cat "$dir/registry.log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "registry.sh: the registry did not answer on $addr in 10 s; its log:" >&2
	cat "$dir/registry.log" >&2
	return 1
}

# registry_stop ends the registry registry_serve started, if any.
registry_stop() {
	[ -n "${REGISTRY_PID:-}" ] || return 0
	kill "$REGISTRY_PID" 2>/dev/null || true
	wait "$REGISTRY_PID" 2>/dev/null || true
	REGISTRY_PID=
}
