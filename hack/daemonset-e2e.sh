#!/usr/bin/env bash
# splitlet's DaemonSet (deploy/daemonset) on a cluster whose node is a real
# kubelet: `make daemonset-e2e` runs this.
#
# Outside any namespace it builds what the test needs: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and the kubelet
# (hack/lib/kube.sh, cached in $SPLITLET_CACHE), Debian's etcd-server,
# containerd, runc, busybox-static and CNI plugins, the test images
# (hack/images.sh), splitlet's binaries, splitlet's three images from those
# binaries (the FROM-scratch images of deploy/images, written by mkimage, so no
# Docker engine is needed), and the test binary (services/sync/test/daemonset).
# It then re-runs itself in a new network namespace (unshare --net) where it
# starts two containerds: the kubelet's, holding splitlet's images, and
# splitlet's own (the DaemonSet's runtime-socket hostPath), whose CNI bridge
# takes the pod CIDR of the Node splitlet registers; then it runs the test.
# Everything lives in one temporary directory that is removed on exit.
#
# Must run as root. Environment:
#   SPLITLET_E2E_KEEP=1    keep the work directory for inspection
#   E2E_GO_TEST_FLAGS      extra flags for the test binary (e.g. -test.run=X)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[daemonset-e2e] $*" >&2; }
busybox_image=docker.io/library/busybox:1.36

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root: it installs packages, creates a network namespace and runs containerd and a kubelet"
  exit 1
fi

# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"
# Both containerds give pods a bridge network: a Node is Ready only when its
# runtime's network is.
export CONTAINERD_WITH_CNI=1
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"

# inner runs in the new network namespace: the two containerds, then the test.
inner() {
  local workdir=$1 images=$1/images
  ip link set lo up
  # The kubelet's node address: it refuses loopback. TEST-NET-1 on lo, so
  # nothing leaves the namespace.
  ip addr add 192.0.2.10/32 dev lo
  trap containerd_exit_trap EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  containerd_start_more "$workdir/k" "$images/pause.tar" "$images"/splitlet-{gateway,admission,sync}.tar
  local kubelet_endpoint=unix://$CONTAINERD_SOCK
  CONTAINERD_CNI_BRIDGE=splt0 containerd_start_more "$workdir/s" "$images/pause.tar" "$images/busybox.tar"
  log "kubelet's containerd $kubelet_endpoint, splitlet's $CONTAINERD_DIR"
  # shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags.
  (cd "$root/services/sync/test/daemonset" &&
    SPLITLET_KUBE_BIN_DIR=$KUBE_BIN_DIR SPLITLET_KUBELET_RUNTIME_ENDPOINT=$kubelet_endpoint \
    SPLITLET_RUNTIME_DIR=$CONTAINERD_DIR SPLITLET_E2E_DIR=$workdir/t \
    SPLITLET_DEPLOY_DIR=$root/deploy/daemonset SPLITLET_BUSYBOX_IMAGE=$busybox_image \
    "$workdir/daemonset.test" -test.count=1 -test.v -test.timeout=10m ${E2E_GO_TEST_FLAGS:-})
}

if [ "${1:-}" = inner ]; then
  inner "$2"
  exit
fi

# shellcheck source-path=SCRIPTDIR source=lib/workdir.sh
source "$root/hack/lib/workdir.sh"
e2e_workdir splitlet-ds

start=$SECONDS
kube_build kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet
kube_install_etcd
containerd_install
log "building test images, splitlet's binaries and images, and the test"
"$root/hack/images.sh" "$workdir/images" >/dev/null
make -C "$root" build >/dev/null
# splitlet's images as deploy/images/Dockerfile.* build them: the static
# binary alone, under the names daemonset.yaml uses.
for c in gateway admission sync; do
  extra=()
  [ "$c" = admission ] && extra=(-file "$root/bin/splitlet-plugin-image-allowlist:/splitlet-plugin-image-allowlist")
  "$workdir/images/bin/mkimage" -ref "docker.io/splitlet/$c:dev" -file "$root/bin/splitlet-$c:/splitlet-$c" "${extra[@]}" \
    -entrypoint "/splitlet-$c" -o "$workdir/images/splitlet-$c.tar"
done
# Built here: the namespace has no route to the module proxy.
(cd "$root/services/sync" && go test -c -race -o "$workdir/daemonset.test" ./test/daemonset/)
log "prepared in $((SECONDS - start)) s; running the test in a new network namespace"
unshare --net -- "$0" inner "$workdir"
log "PASS in $((SECONDS - start)) s"
