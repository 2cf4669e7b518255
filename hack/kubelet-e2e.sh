#!/usr/bin/env bash
# A real kubelet as a node of the project's control plane: what the
# conformance harness needs to run the e2e suite against the kubelet and
# compare it with splitlet (internal/kubeletnode, services/sync/test/kubelet).
#
# Outside any namespace it builds what the test needs: kube-apiserver,
# kube-controller-manager, kube-scheduler and the kubelet (hack/lib/kube.sh,
# cached in $SPLITLET_CACHE), Debian's etcd-server, containerd, runc,
# busybox-static and the CNI plugins, the test images (hack/images.sh) and the
# test binary. It then re-runs itself in a new network namespace (unshare
# --net), gives the node an address there ($KUBELET_E2E_NODE_IP on lo: the
# kubelet refuses a loopback node IP, and this kernel has no dummy links),
# starts one private containerd with a CNI bridge (pods get IPs) and runs the
# test binary, which starts the control plane and the kubelet. Nothing
# listens outside that namespace. Everything lives in one temporary directory
# that is removed on exit.
#
# Must run as root. Environment:
#   KUBELET_E2E_NODE_IP    the node's address inside the namespace (default 192.0.2.10, TEST-NET-1)
#   SPLITLET_E2E_KEEP=1    keep the work directory for inspection
#   E2E_GO_TEST_FLAGS      extra flags for the test binary (e.g. -test.run=X)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[kubelet-e2e] $*" >&2; }
busybox_image=docker.io/library/busybox:1.36
node_ip=${KUBELET_E2E_NODE_IP:-192.0.2.10}

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root: it installs packages, creates a network namespace and runs containerd and the kubelet"
  exit 1
fi

export CONTAINERD_WITH_CNI=1
# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"

stop_containerd() {
  local rc=$?
  set +e
  if [ "$rc" -ne 0 ] && [ -s "${CONTAINERD_LOG:-}" ]; then
    log "---- containerd log (last 30 lines) ----"; tail -n 30 "$CONTAINERD_LOG" >&2
  fi
  containerd_stop
  exit "$rc"
}

# inner runs in the new network namespace: the node address, containerd,
# then the test.
inner() {
  local workdir=$1
  ip link set lo up
  ip addr add "$node_ip/32" dev lo
  trap stop_containerd EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  containerd_start "$workdir/c" >/dev/null
  containerd_import "$workdir/images/pause.tar" "$workdir/images/busybox.tar" 2>/dev/null
  log "containerd on unix://$CONTAINERD_SOCK, node IP $node_ip"
  # shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags.
  (cd "$root/services/sync/test/kubelet" &&
    SPLITLET_KUBE_BIN_DIR=$KUBE_BIN_DIR SPLITLET_CONTAINERD_ENDPOINTS=unix://$CONTAINERD_SOCK \
    SPLITLET_NODE_IP=$node_ip SPLITLET_BUSYBOX_IMAGE=$busybox_image \
    "$workdir/kubelet.test" -test.count=1 -test.v -test.timeout=10m ${E2E_GO_TEST_FLAGS:-})
}

if [ "${1:-}" = inner ]; then
  inner "$2"
  exit
fi

# shellcheck source-path=SCRIPTDIR source=lib/workdir.sh
source "$root/hack/lib/workdir.sh"
e2e_workdir splitlet-kl

start=$SECONDS
kube_build kube-apiserver kube-controller-manager kube-scheduler kubelet
kube_install_etcd
containerd_install
log "building test images and the test"
"$root/hack/images.sh" "$workdir/images" >/dev/null
# Built here: the namespace has no route to the module proxy.
(cd "$root/services/sync" && go test -c -race -o "$workdir/kubelet.test" ./test/kubelet/)
log "prepared in $((SECONDS - start)) s; running the test in a new network namespace"
unshare --net -- "$0" inner "$workdir"
log "PASS in $((SECONDS - start)) s"
