# shellcheck shell=bash
# Kubernetes components built from the Go module proxy, cached outside the
# clone, keyed by version (hack/lib/cache.sh). Source this file.
#
#   kube_build CMD...   build each k8s.io/kubernetes ./cmd/CMD (kube-apiserver,
#                       kube-controller-manager, kube-scheduler, kubectl, ...)
#                       into $KUBE_BIN_DIR unless it is there already
#   kube_install_etcd   apt-get install Debian's etcd-server unless etcd is in PATH
#
# The module zip of k8s.io/kubernetes lacks staging/ (the repository's go.mod
# replaces every k8s.io/* library with ./staging/src/...), so a copy of the
# module is made once per version under $SPLITLET_CACHE/kubernetes-VERSION/src
# and its replace block rewritten to the published k8s.io/* modules at the
# matching v0.X.Y versions. Every component builds from that one copy, so the
# second and later builds share its module and build caches.
#
# Environment:
#   KUBE_VERSION    k8s.io/kubernetes version (default v1.36.3, the newest the
#                   proxy served when this was written; there is no v1.37.x yet)

# shellcheck source-path=SCRIPTDIR source=cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
KUBE_VERSION=${KUBE_VERSION:-v1.36.3}
KUBE_DIR=$SPLITLET_CACHE/kubernetes-$KUBE_VERSION
KUBE_BIN_DIR=$KUBE_DIR/bin

kube_log() { printf 'kube.sh: %s\n' "$*" >&2; }

# kube_source prepares $KUBE_DIR/src once; the marker file written last says
# a copy is complete, so an interrupted preparation is redone.
kube_source() {
	local src=$KUBE_DIR/src marker=$KUBE_DIR/src/.splitlet-prepared
	[[ -f $marker ]] && return
	mkdir -p "$KUBE_DIR"
	local mod_dir lib_version m
	mod_dir=$(cd "$KUBE_DIR" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[[ -n $mod_dir ]] || { kube_log "go mod download k8s.io/kubernetes@$KUBE_VERSION failed"; return 1; }
	# k8s.io/kubernetes v1.X.Y publishes its staging libraries as v0.X.Y.
	lib_version=v0.${KUBE_VERSION#v1.}
	rm -rf "$src"
	cp -r "$mod_dir" "$src"
	chmod -R u+w "$src"
	rm -f "$src/go.work" "$src/go.work.sum"
	rm -rf "$src/vendor"
	# Point each ./staging replace at the published module.
	sed -i -E "s#^([[:space:]]*k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1 => \1 $lib_version#" "$src/go.mod"
	# Drop replaces for staging modules the proxy does not serve at that
	# version (no component imports them; sample-* and the like).
	sed -n -E "s#^[[:space:]]*(k8s\.io/[a-z0-9-]+) => k8s\.io/[a-z0-9-]+ $lib_version\$#\1#p" "$src/go.mod" >"$KUBE_DIR/staging-modules"
	while read -r m; do
		if ! (cd "$KUBE_DIR" && GOWORK=off GOFLAGS=-mod=mod go list -m "$m@$lib_version" >/dev/null 2>&1); then
			kube_log "no $m@$lib_version on the proxy; dropping its replace and require"
			sed -i -E "\#^[[:space:]]*$m (=> |v0\.0\.0)#d" "$src/go.mod"
		fi
	done <"$KUBE_DIR/staging-modules"
	touch "$marker"
}

kube_build() {
	local cmd
	for cmd in "$@"; do
		_kube_make "$cmd" build "./cmd/$cmd"
	done
}

# _kube_make NAME GO-VERB PKG runs `go GO-VERB -o $KUBE_BIN_DIR/NAME PKG`
# (GO-VERB "build", or "test -c" for a test binary) in the prepared
# Kubernetes module unless NAME is there, holding the lock every Kubernetes
# build of this version shares: they share one module copy, and two at once
# would compile the same packages twice.
_kube_make() {
	cache_ensure "kubernetes-$KUBE_VERSION" _kube_built _kube_make_locked "$@"
}

_kube_built() { [[ -x $KUBE_BIN_DIR/$1 ]]; }

_kube_make_locked() {
	local name=$1 pkg=$3 start=$SECONDS ldflags="-s -w" p verb
	read -ra verb <<<"$2"
	# The version components report (/version, kubectl version), as
	# hack/lib/version.sh would stamp it; unset it reads v0.0.0-master.
	# No symbol table or DWARF (-s -w, as Kubernetes' release builds):
	# nothing debugs these, and writing it is much of a big binary's link.
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1"
		ldflags+=" -X $p.gitMinor=$(cut -d. -f2 <<<"$KUBE_VERSION")"
	done
	kube_source
	mkdir -p "$KUBE_BIN_DIR"
	kube_log "building $name $KUBE_VERSION (minutes on 2 cores when cold)"
	# Built to a temporary name and moved, so an interrupted build never
	# leaves a binary that passes for cached.
	(cd "$KUBE_DIR/src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
		go "${verb[@]}" -ldflags "$ldflags" -o "$KUBE_BIN_DIR/.$name.tmp.$$" "$pkg")
	mv "$KUBE_BIN_DIR/.$name.tmp.$$" "$KUBE_BIN_DIR/$name"
	kube_log "built $KUBE_BIN_DIR/$name in $((SECONDS - start)) s"
}

kube_install_etcd() {
	command -v etcd >/dev/null && return
	kube_log "installing Debian etcd-server"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server >/dev/null
}

# kube_build_e2e builds Kubernetes' e2e suite (`go test -c ./test/e2e`,
# minutes on 2 cores) and the ginkgo CLI of the same version (it runs the
# suite's specs in parallel processes) into $KUBE_BIN_DIR, unless there.
kube_build_e2e() {
	_kube_make e2e.test "test -c" ./test/e2e
	_kube_make ginkgo build github.com/onsi/ginkgo/v2/ginkgo
}

# kube_build_image_binary NAME builds the static binary of the e2e image
# test/images/NAME (agnhost, nonewprivs) from the Kubernetes module into
# $KUBE_BIN_DIR/NAME, unless there; hack/conformance-images.sh puts it in
# that image.
kube_build_image_binary() {
	_kube_make "$1" build "./test/images/$1"
}
