# shellcheck shell=bash
# Where third-party builds (kube-apiserver, crictl and critest,
# metrics-server, containerd 2.x: hack/lib/containerd.sh) are cached:
# outside the clone, keyed by version, so a fresh clone and CI reuse them.
#
#   cache_ensure LOCK CHECK BUILD [ARG...]
#                              unless CHECK ARG... succeeds, run BUILD ARG...
#                              holding the lock LOCK
#   critools_build             crictl and critest into $CRI_TOOLS_DIR
#   metrics_server_build       metrics-server into $METRICS_SERVER_BIN
#
# Every *_build function here and in kube.sh, containerd.sh and registry.sh
# builds through cache_ensure: when two scripts ask for the same binary at
# once (`make prebuild` beside a suite, two suites), the later one waits for
# the build in progress and then finds the binary, instead of building it a
# second time.
SPLITLET_CACHE=${SPLITLET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/splitlet}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.30.0}
CRI_TOOLS_DIR=$SPLITLET_CACHE/cri-tools-$CRI_TOOLS_VERSION
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
METRICS_SERVER_BIN=$SPLITLET_CACHE/metrics-server-$METRICS_SERVER_VERSION/metrics-server

cache_ensure() {
	local lock=$1 check=$2 build=$3
	shift 3
	"$check" "$@" && return 0
	mkdir -p "$SPLITLET_CACHE"
	# CHECK again once the lock is held: the holder before may have built it.
	(
		flock 9
		"$check" "$@" || "$build" "$@"
	) 9>"$SPLITLET_CACHE/.$lock.lock"
}

# _cache_module_dir MODULE@VERSION prints the directory `go mod download`
# put the module in.
_cache_module_dir() {
	(cd "$SPLITLET_CACHE" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

# _critools_stamp is what .version holds for the binaries built here: the
# version, and "static" since both are built without cgo (a cache from
# before, where critest was built with it, is rebuilt).
_critools_stamp() { echo "$CRI_TOOLS_VERSION static"; }

_critools_built() {
	[[ -x $CRI_TOOLS_DIR/critest && -x $CRI_TOOLS_DIR/crictl &&
		"$(cat "$CRI_TOOLS_DIR/.version" 2>/dev/null)" == "$(_critools_stamp)" ]]
}

# critools_build builds crictl and critest once into $CRI_TOOLS_DIR. The
# module proxy serves cri-tools only as a module and `go install` refuses it
# (replace directives), so they are built from a writable copy of the module.
critools_build() {
	cache_ensure cri-tools _critools_built _critools_build
}

_critools_build() {
	printf 'cache.sh: building crictl and critest %s (about 2 minutes cold)\n' "$CRI_TOOLS_VERSION" >&2
	mkdir -p "$CRI_TOOLS_DIR"
	rm -f "$CRI_TOOLS_DIR/.version"
	local dir
	dir=$(_cache_module_dir "sigs.k8s.io/cri-tools@$CRI_TOOLS_VERSION")
	[[ -n $dir ]] || return 1
	rm -rf "$CRI_TOOLS_DIR/src"
	cp -r "$dir" "$CRI_TOOLS_DIR/src"
	chmod -R u+w "$CRI_TOOLS_DIR/src"
	# The module's vendor/ is incomplete and our go.work must not apply to it.
	# Both without cgo: with it, every package that imports net (most of
	# critest's 795) is compiled a second time, beside crictl's build of it;
	# cold, critest took 125 s with cgo and 58 s without (RELIABILITY.md).
	(cd "$CRI_TOOLS_DIR/src" && export GOWORK=off CGO_ENABLED=0 &&
		go build -mod=mod -o "$CRI_TOOLS_DIR/crictl" ./cmd/crictl &&
		go test -mod=mod -c -o "$CRI_TOOLS_DIR/critest" ./cmd/critest)
	_critools_stamp >"$CRI_TOOLS_DIR/.version"
}

# metrics_server_build builds metrics-server from the module proxy (its own
# go.mod pins its Kubernetes libraries).
metrics_server_build() {
	cache_ensure metrics-server _metrics_server_built _metrics_server_build
}

_metrics_server_built() { [[ -x $METRICS_SERVER_BIN ]]; }

_metrics_server_build() {
	printf 'cache.sh: building metrics-server %s\n' "$METRICS_SERVER_VERSION" >&2
	(cd "$SPLITLET_CACHE" && GOWORK=off CGO_ENABLED=0 GOBIN=$(dirname "$METRICS_SERVER_BIN") \
		go install "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION")
}
