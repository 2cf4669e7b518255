#!/usr/bin/env bash
# A real etcd + kube-apiserver on loopback, for splitlet's API-server tests.
#
#   hack/apiserver.sh build   build kube-apiserver into $SPLITLET_CACHE (cached
#                             outside the clone, keyed by version)
#   hack/apiserver.sh start   start etcd and kube-apiserver in the background,
#                             write _out/apiserver/kubeconfig (admin) and
#                             _out/apiserver/node.kubeconfig, wait until healthy
#   hack/apiserver.sh stop    stop both
#   hack/apiserver.sh env     print the exports the integration test reads
#                             (services/sync/test/apiserver): SPLITLET_KUBECONFIG
#                             (admin) and SPLITLET_NODE_KUBECONFIG/_USER (the
#                             node identity sync runs as, under the DaemonSet's RBAC)
#                             and SPLITLET_APISERVER_PKI (ca.crt, which signed the API
#                             server's kubelet-client.crt, and node-api.crt/.key
#                             for a node API on 127.0.0.1)
#
# The API server aggregates extension API servers (front-proxy client
# certificate, --enable-aggregator-routing), so a test can register
# metrics-server.
#
# etcd comes from Debian (etcd-server, installed when missing). kube-apiserver
# is built from the k8s.io/kubernetes module served by the Go module proxy
# (hack/lib/kube.sh).
#
# Environment:
#   KUBE_VERSION    k8s.io/kubernetes version (default v1.36.3, the newest the
#                   proxy served when this was written; there is no v1.37.x yet)
#   APISERVER_DIR   state, certificates, logs (default _out/apiserver)
#   SPLITLET_CACHE  third-party builds, kept across clones
#                   (default ${XDG_CACHE_HOME:-~/.cache}/splitlet; hack/lib/cache.sh)
#   ETCD_PORT, APISERVER_PORT  loopback ports (defaults 23790, 26443)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${APISERVER_DIR:-$root/_out/apiserver}
etcd_port=${ETCD_PORT:-23790}
etcd_peer_port=$((etcd_port + 1))
api_port=${APISERVER_PORT:-26443}
# shellcheck source=hack/lib/kube.sh
source "$root/hack/lib/kube.sh"
apiserver_bin=$KUBE_BIN_DIR/kube-apiserver

log() { printf 'apiserver.sh: %s\n' "$*" >&2; }

build() {
	kube_build kube-apiserver
}

certs() {
	local pki=$dir/pki
	kubelet_certs
	aggregator_certs
	[[ -f $pki/ca.crt ]] && return
	mkdir -p "$pki"
	(
		cd "$pki"
		openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=splitlet-test-ca" \
			-keyout ca.key -out ca.crt 2>/dev/null
		cat >serving.ext <<-EOF
			subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes.default.svc
			extendedKeyUsage=serverAuth
		EOF
		openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout serving.key -out serving.csr 2>/dev/null
		openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
			-extfile serving.ext -out serving.crt 2>/dev/null
		# Service-account signing key pair.
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	)
	kubelet_certs
	aggregator_certs
	# Static tokens: an admin, and a node identity in system:nodes (RBAC, not
	# the Node authorizer, decides what it may do: deploy/daemonset/rbac.yaml).
	printf '%s,admin,admin,system:masters\n' "$(token admin)" >"$pki/tokens.csv"
	printf '%s,system:node:splitlet-node,splitlet-node,system:nodes\n' "$(token node)" >>"$pki/tokens.csv"
}

# kubelet_certs makes what the API server's proxy to a node API needs, signed
# by the test CA: its kubelet client certificate (the user the node API
# authorizes, as kubeadm names it) and a serving certificate for a node API
# on 127.0.0.1 or 192.0.2.10 (the node address hack/apiserver-e2e.sh puts on
# lo in its namespace: the API server's nodes/proxy refuses loopback),
# verified with --kubelet-certificate-authority.
kubelet_certs() {
	local pki=$dir/pki
	[[ -f $pki/node-api.crt ]] && return
	[[ -f $pki/ca.crt ]] || return 0
	(
		cd "$pki"
		printf 'extendedKeyUsage=clientAuth\n' >kubelet-client.ext
		openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver-kubelet-client" \
			-keyout kubelet-client.key -out kubelet-client.csr 2>/dev/null
		openssl x509 -req -in kubelet-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
			-extfile kubelet-client.ext -out kubelet-client.crt 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,IP:192.0.2.10\nextendedKeyUsage=serverAuth\n' >node-api.ext
		openssl req -newkey rsa:2048 -nodes -subj "/CN=splitlet-node-api" -keyout node-api.key -out node-api.csr 2>/dev/null
		openssl x509 -req -in node-api.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
			-extfile node-api.ext -out node-api.crt 2>/dev/null
	)
}

# aggregator_certs makes the API server's front-proxy client certificate,
# signed by the test CA, with which the aggregator calls an extension API
# server (metrics-server) on behalf of the user it names in X-Remote-User.
aggregator_certs() {
	local pki=$dir/pki
	[[ -f $pki/front-proxy-client.crt ]] && return
	[[ -f $pki/ca.crt ]] || return 0
	(
		cd "$pki"
		printf 'extendedKeyUsage=clientAuth\n' >front-proxy-client.ext
		openssl req -newkey rsa:2048 -nodes -subj "/CN=front-proxy-client" \
			-keyout front-proxy-client.key -out front-proxy-client.csr 2>/dev/null
		openssl x509 -req -in front-proxy-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
			-extfile front-proxy-client.ext -out front-proxy-client.crt 2>/dev/null
	)
}

token() { printf 'splitlet-%s-%s' "$1" "$(tr -d - </proc/sys/kernel/random/boot_id | cut -c1-16)"; }

kubeconfig() { # name user token
	cat >"$dir/$1" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: test
		  cluster:
		    server: https://127.0.0.1:$api_port
		    certificate-authority: $dir/pki/ca.crt
		users:
		- name: $2
		  user:
		    token: $3
		contexts:
		- name: test
		  context: {cluster: test, user: $2}
		current-context: test
	EOF
}

start() {
	build
	kube_install_etcd
	certs
	mkdir -p "$dir/etcd" "$dir/log"
	if ! [[ -f $dir/etcd.pid ]] || ! kill -0 "$(cat "$dir/etcd.pid")" 2>/dev/null; then
		etcd --name splitlet-test --data-dir "$dir/etcd" \
			--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
			--listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
			--initial-cluster "splitlet-test=http://127.0.0.1:$etcd_peer_port" \
			>"$dir/log/etcd.log" 2>&1 &
		echo $! >"$dir/etcd.pid"
	fi
	if ! [[ -f $dir/apiserver.pid ]] || ! kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; then
		"$apiserver_bin" \
			--etcd-servers "http://127.0.0.1:$etcd_port" \
			--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
			--tls-cert-file "$dir/pki/serving.crt" --tls-private-key-file "$dir/pki/serving.key" \
			--client-ca-file "$dir/pki/ca.crt" \
			--token-auth-file "$dir/pki/tokens.csv" \
			--authorization-mode RBAC \
			--service-account-issuer https://kubernetes.default.svc \
			--service-account-key-file "$dir/pki/sa.pub" \
			--service-account-signing-key-file "$dir/pki/sa.key" \
			--service-cluster-ip-range 10.96.0.0/16 \
			--kubelet-client-certificate "$dir/pki/kubelet-client.crt" --kubelet-client-key "$dir/pki/kubelet-client.key" \
			--kubelet-certificate-authority "$dir/pki/ca.crt" \
			--kubelet-preferred-address-types InternalIP,Hostname \
			--requestheader-client-ca-file "$dir/pki/ca.crt" --requestheader-allowed-names front-proxy-client \
			--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
			--requestheader-extra-headers-prefix X-Remote-Extra- \
			--proxy-client-cert-file "$dir/pki/front-proxy-client.crt" --proxy-client-key-file "$dir/pki/front-proxy-client.key" \
			--enable-aggregator-routing \
			>"$dir/log/kube-apiserver.log" 2>&1 &
		echo $! >"$dir/apiserver.pid"
	fi
	kubeconfig kubeconfig admin "$(token admin)"
	kubeconfig node.kubeconfig splitlet-node "$(token node)"
	for _ in $(seq 1 120); do
		if ! kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; then
			log "kube-apiserver exited; see $dir/log/kube-apiserver.log"
			tail -5 "$dir/log/kube-apiserver.log" >&2
			rm -f "$dir/apiserver.pid"
			exit 1
		fi
		if curl -fsk -H "Authorization: Bearer $(token admin)" "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then
			log "ready: https://127.0.0.1:$api_port (kubeconfig $dir/kubeconfig)"
			return
		fi
		sleep 1
	done
	log "kube-apiserver not ready after 120 s; see $dir/log/kube-apiserver.log"
	tail -20 "$dir/log/kube-apiserver.log" >&2
	exit 1
}

# stop ends kube-apiserver, then etcd, each by the PID start recorded, and
# waits for it to exit so that a following start finds its ports free.
stop() {
	local p pid
	for p in apiserver etcd; do
		[[ -f $dir/$p.pid ]] || continue
		pid=$(cat "$dir/$p.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$dir/$p.pid"
	done
}

case ${1:-start} in
build) build ;;
start) start ;;
stop) stop ;;
env)
	echo "export SPLITLET_KUBECONFIG=$dir/kubeconfig"
	echo "export SPLITLET_NODE_KUBECONFIG=$dir/node.kubeconfig SPLITLET_NODE_USER=system:node:splitlet-node"
	echo "export SPLITLET_APISERVER_PKI=$dir/pki"
	;;
*)
	echo "usage: $0 build|start|stop|env" >&2
	exit 2
	;;
esac
