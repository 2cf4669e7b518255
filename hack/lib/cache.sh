# shellcheck shell=bash
# Where third-party builds (kube-apiserver, crictl and critest,
# metrics-server, containerd 2.x: hack/lib/containerd.sh) are cached:
# outside the clone, keyed by version, so a fresh clone and CI reuse them.
#
#   cache_locked NAME CMD...   run CMD (in a subshell) holding the lock NAME
#   critools_build             crictl and critest into $CRI_TOOLS_DIR
#   metrics_server_build       metrics-server into $METRICS_SERVER_BIN
#
# Every *_build function here and in kube.sh, containerd.sh and registry.sh
# builds under cache_locked and checks the cache again once it holds the
# lock: when two scripts ask for the same binary at once (`make prebuild`
# beside a suite, two suites), the later one waits for the build in
# progress instead of starting a second one.
SPLITLET_CACHE=${SPLITLET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/splitlet}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.30.0}
CRI_TOOLS_DIR=$SPLITLET_CACHE/cri-tools-$CRI_TOOLS_VERSION
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
METRICS_SERVER_BIN=$SPLITLET_CACHE/metrics-server-$METRICS_SERVER_VERSION/metrics-server

cache_locked() {
	local name=$1
	shift
	mkdir -p "$SPLITLET_CACHE"
	(
		flock 9
		"$@"
	) 9>"$SPLITLET_CACHE/.$name.lock"
}

# _cache_module_dir MODULE@VERSION prints the directory `go mod download`
# put the module in.
_cache_module_dir() {
	(cd "$SPLITLET_CACHE" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

_critools_built() {
	[[ -x $CRI_TOOLS_DIR/critest && -x $CRI_TOOLS_DIR/crictl &&
		"$(cat "$CRI_TOOLS_DIR/.version" 2>/dev/null)" == "$CRI_TOOLS_VERSION" ]]
}

# critools_build builds crictl and critest once into $CRI_TOOLS_DIR. The
# module proxy serves cri-tools only as a module and `go install` refuses it
# (replace directives), so they are built from a writable copy of the module.
critools_build() {
	_critools_built || cache_locked cri-tools _critools_build
}

_critools_build() {
	_critools_built && return
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
	(cd "$CRI_TOOLS_DIR/src" &&
		GOWORK=off CGO_ENABLED=0 go build -mod=mod -o "$CRI_TOOLS_DIR/crictl" ./cmd/crictl &&
		GOWORK=off go test -mod=mod -c -o "$CRI_TOOLS_DIR/critest" ./cmd/critest)
	echo "$CRI_TOOLS_VERSION" >"$CRI_TOOLS_DIR/.version"
}

# metrics_server_build builds metrics-server from the module proxy (its own
# go.mod pins its Kubernetes libraries).
metrics_server_build() {
	[[ -x $METRICS_SERVER_BIN ]] || cache_locked metrics-server _metrics_server_build
}

_metrics_server_build() {
	[[ -x $METRICS_SERVER_BIN ]] && return
	printf 'cache.sh: building metrics-server %s\n' "$METRICS_SERVER_VERSION" >&2
	(cd "$SPLITLET_CACHE" && GOWORK=off CGO_ENABLED=0 GOBIN=$(dirname "$METRICS_SERVER_BIN") \
		go install "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION")
}
