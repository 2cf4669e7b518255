#!/usr/bin/env bash
# splitlet against a real etcd + kube-apiserver: `make apiserver-e2e` runs this.
#
# Outside any namespace it builds what the test needs: kube-apiserver and
# kubectl (hack/lib/kube.sh, cached in $SPLITLET_CACHE), the distribution
# registry (hack/lib/registry.sh, cached too), metrics-server (for kubectl
# top; cached there too), Debian's etcd-server,
# containerd, runc and busybox-static, the test images (hack/images.sh),
# splitlet's binaries and the test binary (services/sync/test/apiserver).
# As root it then re-runs itself in a new network namespace (unshare --net),
# starts the API server (hack/apiserver.sh) and a private containerd there
# and runs the test binary, so the API server's fixed ports never meet
# another run's and nothing listens outside the namespace. Without root it
# runs the tests on this machine's loopback and the containerd tests skip,
# saying why.
#
# Environment: SPLITLET_E2E_KEEP=1 keeps the work directory;
# E2E_GO_TEST_FLAGS adds flags to the test binary (e.g. -test.run=X).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[apiserver-e2e] $*" >&2; }
busybox_image=docker.io/library/busybox:1.36

# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"
# A CNI bridge, so that containerd reports NetworkReady and the Node sync
# registers is Ready (the kubelet's rule), though the tests' pods use the
# host network.
export CONTAINERD_WITH_CNI=1
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"
# shellcheck source-path=SCRIPTDIR source=lib/registry.sh
source "$root/hack/lib/registry.sh"

# run_tests starts the API server (and, given a work directory, containerd)
# and runs the test binary; everything stops on return.
run_tests() {
  local workdir=$1 with_containerd=$2
  export APISERVER_DIR=$workdir/apiserver
  trap 'set +e; containerd_stop; "$root/hack/apiserver.sh" stop' EXIT
  "$root/hack/apiserver.sh" start
  eval "$("$root/hack/apiserver.sh" env)"
  if [ "$with_containerd" = 1 ]; then
    containerd_start "$workdir/ctrd" >/dev/null
    containerd_import "$workdir/images/pause.tar" "$workdir/images/busybox.tar" 2>/dev/null
    export SPLITLET_CONTAINERD_ENDPOINT=unix://$CONTAINERD_SOCK SPLITLET_BUSYBOX_IMAGE=$busybox_image
    export SPLITLET_REGISTRY_BIN=$REGISTRY_BIN
  fi
  # shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags.
  (cd "$root/services/sync/test/apiserver" &&
    SPLITLET_KUBE_BIN_DIR=$KUBE_BIN_DIR SPLITLET_BIN_DIR=$root/bin SPLITLET_METRICS_SERVER=$METRICS_SERVER_BIN \
    "$workdir/apiserver.test" -test.count=1 -test.v -test.timeout=10m ${E2E_GO_TEST_FLAGS:-})
}

if [ "${1:-}" = inner ]; then
  ip link set lo up
  # A node address the API server will proxy nodes/proxy to (it refuses
  # loopback): TEST-NET-1 on lo, so nothing leaves the namespace; the node
  # API's certificate (hack/apiserver.sh) names it.
  ip addr add 192.0.2.10/32 dev lo
  export SPLITLET_NODE_IP=192.0.2.10
  run_tests "$2" 1
  exit
fi

# shellcheck source-path=SCRIPTDIR source=lib/workdir.sh
source "$root/hack/lib/workdir.sh"
e2e_workdir splitlet-api

start=$SECONDS
kube_build kube-apiserver kubectl
metrics_server_build
kube_install_etcd
make -C "$root" build >/dev/null
# Built here: the namespace has no route to the module proxy.
(cd "$root/services/sync" && go test -c -o "$workdir/apiserver.test" ./test/apiserver/)
if [ "$(id -u)" -ne 0 ]; then
  log "not root: running on this machine's loopback without containerd"
  run_tests "$workdir" 0
else
  containerd_install
  registry_build
  "$root/hack/images.sh" "$workdir/images" >/dev/null
  log "prepared in $((SECONDS - start)) s; running the test in a new network namespace"
  unshare --net -- "$0" inner "$workdir"
fi
log "PASS in $((SECONDS - start)) s"
