#!/usr/bin/env bash
# splitlet nodes in a real control plane: `make cluster-e2e` runs this.
#
# Outside any namespace it builds what the test needs: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl (hack/lib/kube.sh,
# cached in $SPLITLET_CACHE), Debian's etcd-server, containerd, runc and
# busybox-static, the test images (hack/images.sh), splitlet's binaries and
# the test binary (services/sync/test/cluster). It then re-runs itself in a
# new network namespace (unshare --net) where it starts one private
# containerd per splitlet node (hack/lib/containerd.sh), each with a CNI
# bridge that takes the node's pod CIDR, and runs the test
# binary, which starts the control plane and the nodes (internal/cluster,
# internal/stack). Nothing listens outside that namespace; it disappears with
# the last process in it. Everything lives in one temporary directory that is
# removed on exit.
#
# Must run as root. Environment:
#   CLUSTER_E2E_NODES      splitlet nodes, each with its own containerd (default 2)
#   SPLITLET_E2E_KEEP=1    keep the work directory for inspection
#   E2E_GO_TEST_FLAGS      extra flags for the test binary (e.g. -test.run=X)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[cluster-e2e] $*" >&2; }
busybox_image=docker.io/library/busybox:1.36

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root: it installs packages, creates a network namespace and runs containerd"
  exit 1
fi

# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"
# Pods get addresses from their node's pod CIDR (hack/lib/containerd.sh).
export CONTAINERD_WITH_CNI=1
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"

# inner runs in the new network namespace: containerd per node, then the test.
inner() {
  local workdir=$1 nodes=$2 i endpoints=""
  ip link set lo up
  # The address of the second node's API (services/sync/test/cluster
  # nodeAPIIP): the API server does not proxy to loopback. TEST-NET-1 on
  # lo, so nothing leaves the namespace.
  ip addr add 192.0.2.11/32 dev lo
  trap containerd_exit_trap EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  for i in $(seq 1 "$nodes"); do
    # The node's pod network: a bridge of its own, addressed from the pod
    # CIDR sync hands containerd (conf_template); the namespace routes
    # between the bridges.
    CONTAINERD_CNI_BRIDGE=cbr$i containerd_start_more "$workdir/c$i" "$workdir/images/pause.tar" "$workdir/images/busybox.tar"
    endpoints+="${endpoints:+,}unix://$CONTAINERD_SOCK"
  done
  log "containerd per node: $endpoints"
  # shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags.
  (cd "$root/services/sync/test/cluster" &&
    SPLITLET_KUBE_BIN_DIR=$KUBE_BIN_DIR SPLITLET_CONTAINERD_ENDPOINTS=$endpoints \
    SPLITLET_BIN_DIR=$root/bin SPLITLET_BUSYBOX_IMAGE=$busybox_image \
    "$workdir/cluster.test" -test.count=1 -test.v -test.timeout=10m ${E2E_GO_TEST_FLAGS:-})
}

if [ "${1:-}" = inner ]; then
  inner "$2" "$3"
  exit
fi

nodes=${CLUSTER_E2E_NODES:-2}
# shellcheck source-path=SCRIPTDIR source=lib/workdir.sh
source "$root/hack/lib/workdir.sh"
e2e_workdir splitlet-cl

start=$SECONDS
kube_build kube-apiserver kube-controller-manager kube-scheduler kubectl
kube_install_etcd
containerd_install
log "building test images, splitlet's binaries and the test"
"$root/hack/images.sh" "$workdir/images" >/dev/null
make -C "$root" build >/dev/null
# Built here: the namespace has no route to the module proxy.
(cd "$root/services/sync" && go test -c -race -o "$workdir/cluster.test" ./test/cluster/)
log "prepared in $((SECONDS - start)) s; running the test in a new network namespace with $nodes node(s)"
unshare --net -- "$0" inner "$workdir" "$nodes"
log "PASS in $((SECONDS - start)) s"
