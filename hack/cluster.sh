#!/usr/bin/env bash
# A Kubernetes control plane on this machine, inside a network namespace of
# its own, for trying splitlet on a cluster by hand (`make cluster`). The Go
# package internal/cluster runs the processes (bin/splitlet-cluster); this
# script builds the components and owns the namespace.
#
#   hack/cluster.sh build   build kube-apiserver, kube-controller-manager,
#                           kube-scheduler and kubectl into $SPLITLET_CACHE
#                           (hack/lib/kube.sh), install Debian's etcd-server
#   hack/cluster.sh up      build, create the network namespace, start etcd,
#                           kube-apiserver, kube-controller-manager and
#                           kube-scheduler in it (state in $CLUSTER_DIR), leave
#                           them running and print how to reach them
#   hack/cluster.sh down    stop them and delete the namespace
#   hack/cluster.sh env     print KUBE_BIN_DIR, CLUSTER_DIR and CLUSTER_NETNS exports
#
# Everything the cluster serves listens on 127.0.0.1 inside the namespace, so
# nothing is reachable from elsewhere and no port collides with
# hack/apiserver.sh's. Commands reach it through `ip netns exec`:
#
#   ip netns exec splitlet-cluster kubectl --kubeconfig _out/cluster/admin.kubeconfig get nodes
#
# Must run as root (network namespaces). Environment:
#   CLUSTER_DIR     state, certificates, kubeconfigs, logs (default _out/cluster)
#   CLUSTER_NETNS   the network namespace's name (default splitlet-cluster)
#   KUBE_VERSION, SPLITLET_CACHE   see hack/lib/kube.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${CLUSTER_DIR:-$root/_out/cluster}
netns=${CLUSTER_NETNS:-splitlet-cluster}
# shellcheck source=hack/lib/kube.sh
source "$root/hack/lib/kube.sh"

log() { printf 'cluster.sh: %s\n' "$*" >&2; }

build() {
	kube_build kube-apiserver kube-controller-manager kube-scheduler kubectl
	kube_install_etcd
}

need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		log "must run as root: it creates a network namespace"
		exit 1
	fi
}

up() {
	need_root
	build
	log "building splitlet's binaries"
	make -C "$root" build >/dev/null
	local have
	have=$(ip netns list)
	if [[ $'\n'$have$'\n' != *$'\n'"$netns"[$' \n']* ]]; then
		ip netns add "$netns"
	fi
	ip netns exec "$netns" ip link set lo up
	ip netns exec "$netns" "$root/bin/splitlet-cluster" --dir "$dir" --bin "$KUBE_BIN_DIR" up
	cat <<-EOF

		In the network namespace $netns:
		  ip netns exec $netns $KUBE_BIN_DIR/kubectl --kubeconfig $dir/admin.kubeconfig get --raw /readyz
		  ip netns exec $netns bash     # a shell there; export KUBECONFIG=$dir/admin.kubeconfig
		A node identity (system:node:NAME) for splitlet-sync --kubeconfig:
		  $root/bin/splitlet-cluster --dir $dir node-kubeconfig NAME
		Stop: make cluster-down
	EOF
}

down() {
	need_root
	if [[ -x $root/bin/splitlet-cluster ]]; then
		"$root/bin/splitlet-cluster" --dir "$dir" down
	fi
	local have
	have=$(ip netns list)
	if [[ $'\n'$have$'\n' == *$'\n'"$netns"[$' \n']* ]]; then
		ip netns del "$netns"
	fi
}

case ${1:-up} in
build) build ;;
up) up ;;
down) down ;;
env)
	echo "export KUBE_BIN_DIR=$KUBE_BIN_DIR CLUSTER_DIR=$dir CLUSTER_NETNS=$netns"
	;;
*)
	echo "usage: $0 build|up|down|env" >&2
	exit 2
	;;
esac
