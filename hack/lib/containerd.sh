# shellcheck shell=bash
# Functions to run a private containerd for splitlet's tests: its own root, state,
# socket and config under one work directory, so it never touches a containerd the
# machine may already run. Source this file; every function is idempotent.
#
#   containerd_install            apt-get install runc busybox-static (and Debian's
#                                 containerd, or build containerd 2.x: see
#                                 CONTAINERD_VERSION) if absent
#   containerd_start WORKDIR [EXTRA_TOML]
#                                 write the config (EXTRA_TOML appended verbatim),
#                                 start containerd, wait for its socket; exports
#                                 CONTAINERD_SOCK, CONTAINERD_PID, CONTAINERD_LOG
#   containerd_import FILE...     import OCI image tarballs into the k8s.io namespace
#   containerd_stop               kill every task, stop containerd and its shims,
#                                 unmount what it left under WORKDIR
#   containerd_start_more WORKDIR IMAGE...
#                                 containerd_start and containerd_import, the
#                                 containerd remembered for containerd_stop_all
#                                 (tests that run one per node)
#   containerd_stop_all           containerd_stop each remembered one; with
#                                 SHOW_LOGS=1 first print each one's last lines
#   containerd_exit_trap          an EXIT trap: containerd_stop_all, showing the
#                                 logs when the script fails, keeping its status
#   containerd_mirrors FILE DIR REGISTRY HOST...
#                                 write registry hosts files under DIR sending
#                                 pulls from each HOST to http://REGISTRY, and
#                                 the EXTRA_TOML FILE that points containerd at DIR
#
# CONTAINERD_VERSION selects the containerd:
#   vX.Y.Z (2.x, the default: $CONTAINERD_V2_VERSION)
#           containerd, its runc shim and ctr built from the Go module proxy
#           once into $SPLITLET_CACHE/containerd-vX.Y.Z/bin (hack/lib/cache.sh),
#           put first in PATH when this file is sourced, so the scripts, the Go
#           tests they run and containerd itself (which looks its shim up in
#           PATH) use them; Debian's runc runs the containers
#   debian  (or 1.6) Debian's package, containerd 1.6 on Debian 12 (hack/bench.sh
#           and deploy/images/stage-containerd.sh default to it)
# Each major version gets its own config: containerd 2.x reads version 3,
# whose CRI settings are split over io.containerd.cri.v1.runtime,
# io.containerd.cri.v1.images and io.containerd.grpc.v1.cri (streaming).
#
# Set CONTAINERD_WITH_CNI=1 to install Debian's CNI plugins and give pods a bridge
# network; without it only host-network pods can run, and the runtime reports
# NetworkReady=false, so a node agent registering a Node reports it NotReady (as
# the kubelet does). Set CONTAINERD_CNI_BRIDGE=NAME as well to have the pod
# network follow the node's pod CIDR instead of a fixed 10.88.0.0/16: containerd
# then writes the bridge NAME's config from a template (conf_template) when the
# node agent hands it the Node's spec.podCIDR (CRI UpdateRuntimeConfig), and the
# network is not ready until then.
# The config choices below come from ../shared/ENVIRONMENT.md: without
# restrict_oom_score_adj every sandbox fails on machines whose bounding set lacks
# CAP_SYS_RESOURCE; AppArmor is unavailable; there is no systemd, hence cgroupfs.

CONTAINERD_PAUSE_IMAGE=${CONTAINERD_PAUSE_IMAGE:-registry.k8s.io/pause:3.10}

containerd_log() { echo "[containerd] $*" >&2; }

# shellcheck source-path=SCRIPTDIR source=cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
# The newest containerd 2.x the module proxy served when this was written.
CONTAINERD_V2_VERSION=v2.4.2
CONTAINERD_VERSION=${CONTAINERD_VERSION:-$CONTAINERD_V2_VERSION}
case $CONTAINERD_VERSION in
  debian | 1.6 | 1.6.*) CONTAINERD_VERSION=debian ;;
  v2.*.*) ;;
  2.*.*) CONTAINERD_VERSION=v$CONTAINERD_VERSION ;;
  *)
    containerd_log "CONTAINERD_VERSION=$CONTAINERD_VERSION: want debian (or 1.6) or a 2.x release such as $CONTAINERD_V2_VERSION"
    return 1
    ;;
esac
export CONTAINERD_VERSION
# containerd_major is the config template's major version: 1 or 2.
if [ "$CONTAINERD_VERSION" = debian ]; then containerd_major=1; else containerd_major=2; fi
CONTAINERD_BIN_DIR=""
[ "$containerd_major" = 2 ] && CONTAINERD_BIN_DIR=$SPLITLET_CACHE/containerd-$CONTAINERD_VERSION/bin
# PATH without any cached containerd (a parent script may have chosen
# another), then the chosen one first: its shim must win over Debian's.
_ctrd_path=""
IFS=: read -ra _ctrd_parts <<<"$PATH"
for _ctrd_p in "${_ctrd_parts[@]}"; do
  [[ $_ctrd_p == "$SPLITLET_CACHE"/containerd-*/bin ]] || _ctrd_path+=${_ctrd_path:+:}$_ctrd_p
done
PATH=${CONTAINERD_BIN_DIR:+$CONTAINERD_BIN_DIR:}$_ctrd_path
export PATH
unset _ctrd_path _ctrd_parts _ctrd_p

_apt_updated=""
_apt_install() {
  if [ -z "$_apt_updated" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    _apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# containerd_build builds containerd $CONTAINERD_VERSION (2.x) into
# $CONTAINERD_BIN_DIR unless it is there: about 2 minutes on 2 cores (most
# of it compiling, the rest downloading its modules). The btrfs,
# devmapper and zfs snapshotters need cgo and are not used here.
containerd_build() {
  cache_ensure "containerd-$CONTAINERD_VERSION" _containerd_built _containerd_build
}

_containerd_built() {
  [ -x "$CONTAINERD_BIN_DIR/containerd" ] && [ "$(cat "$CONTAINERD_BIN_DIR/.version" 2>/dev/null)" = "$CONTAINERD_VERSION" ]
}

_containerd_build() {
  local dir tmp
  containerd_log "building containerd $CONTAINERD_VERSION from the Go module proxy into $CONTAINERD_BIN_DIR (about 2 minutes, once)"
  dir=$(dirname "$CONTAINERD_BIN_DIR")
  mkdir -p "$dir"
  # Into a temporary directory first: an interrupted build leaves nothing
  # that passes for cached.
  tmp=$(mktemp -d "$dir/build.XXXXXX")
  chmod 755 "$tmp"
  local start=$SECONDS cmd pkgs=()
  for cmd in containerd containerd-shim-runc-v2 ctr; do
    pkgs+=("github.com/containerd/containerd/v2/cmd/$cmd@$CONTAINERD_VERSION")
  done
  # The version containerd reports (containerd --version, CRI Version) is
  # the release's, as its own Makefile stamps it.
  if ! (cd "$tmp" && GOWORK=off GOFLAGS="" GOBIN=$tmp CGO_ENABLED=0 go install \
    -tags 'no_btrfs no_devmapper no_zfs' \
    -ldflags "-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" "${pkgs[@]}"); then
    rm -rf "$tmp"
    return 1
  fi
  echo "$CONTAINERD_VERSION" >"$tmp/.version"
  rm -rf "$CONTAINERD_BIN_DIR"
  mv "$tmp" "$CONTAINERD_BIN_DIR"
  containerd_log "built containerd $CONTAINERD_VERSION in $((SECONDS - start)) s"
}

containerd_install() {
  local missing=()
  # Debian's package, or for 2.x only Debian's runc beside the build.
  if [ "$containerd_major" = 1 ] && [ ! -x /usr/bin/containerd ]; then missing+=(containerd); fi
  command -v runc >/dev/null || missing+=(runc)
  # Output is captured before matching: `cmd | grep -q` under pipefail fails
  # whenever grep's early exit kills the writer with SIGPIPE.
  local applets="" kind=""
  [ -x /bin/busybox ] && applets=$(/bin/busybox --list 2>/dev/null)
  [[ $'\n'$applets$'\n' == *$'\n'sh$'\n'* ]] || missing+=(busybox-static)
  if [ "${CONTAINERD_WITH_CNI:-}" = 1 ] && [ ! -x /usr/lib/cni/bridge ]; then
    missing+=(containernetworking-plugins iptables)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    containerd_log "installing ${missing[*]} from Debian"
    _apt_install "${missing[@]}"
  fi
  # busybox-static ships /bin/busybox; a dynamic busybox would not run in a
  # scratch image, so insist on the static one.
  kind=$(file -L /bin/busybox 2>/dev/null; ldd /bin/busybox 2>&1) || true
  if [[ $kind != *'statically linked'* && $kind != *'not a dynamic executable'* ]]; then
    _apt_install busybox-static
  fi
  if [ "$containerd_major" = 2 ]; then
    containerd_build
  fi
}

# _containerd_config_head VERSION DIR prints what every config version starts
# with: the version, and the state and sockets under DIR.
_containerd_config_head() {
  local version=$1 dir=$2
  cat <<TOML
version = $version
root = "$dir/root"
state = "$dir/state"

[grpc]
  address = "$dir/containerd.sock"

[ttrpc]
  address = "$dir/containerd.sock.ttrpc"

[debug]
  address = "$dir/containerd.sock.debug"

TOML
}

# _containerd_config_1 DIR CNI_BIN CNI_CONF CNI_TEMPLATE prints containerd 1.x's
# config (version 2).
_containerd_config_1() {
  local dir=$1 bin=$2 conf=$3 template=$4
  _containerd_config_head 2 "$dir"
  cat <<TOML
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$CONTAINERD_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "$bin"
  conf_dir = "$conf"
  conf_template = "$template"
TOML
}

# _containerd_config_2 prints containerd 2.x's config (version 3, read by every
# 2.x; 2.4 migrates it to its version 4): the same settings as
# _containerd_config_1 under 2.x's plugin IDs. The streaming server
# (io.containerd.grpc.v1.cri) keeps its defaults, 127.0.0.1 and a free port,
# as on 1.x.
_containerd_config_2() {
  local dir=$1 bin=$2 conf=$3 template=$4
  _containerd_config_head 3 "$dir"
  cat <<TOML
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "$CONTAINERD_PAUSE_IMAGE"

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false

[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = false

[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["$bin"]
  conf_dir = "$conf"
  conf_template = "$template"
TOML
}

containerd_start() {
  local workdir=$1 extra=${2:-}
  mkdir -p "$workdir"
  workdir=$(cd "$workdir" && pwd)
  CONTAINERD_DIR=$workdir
  CONTAINERD_SOCK=$workdir/containerd.sock
  CONTAINERD_LOG=$workdir/containerd.log
  local cni_bin=/usr/lib/cni cni_conf=$workdir/cni/net.d
  mkdir -p "$cni_conf" "$workdir/root" "$workdir/state"
  local cni_template=""
  if [ "${CONTAINERD_WITH_CNI:-}" = 1 ] && [ -n "${CONTAINERD_CNI_BRIDGE:-}" ]; then
    # Routes between the nodes' bridges come from the namespace they share;
    # no masquerading: pods are reached by their own addresses.
    cni_template=$workdir/cni/template.json
    cat >"$cni_template" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "splitlet",
  "plugins": [
    {"type": "bridge", "bridge": "$CONTAINERD_CNI_BRIDGE", "isGateway": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "{{.PodCIDR}}"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$workdir/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
JSON
  elif [ "${CONTAINERD_WITH_CNI:-}" = 1 ]; then
    cat >"$cni_conf/10-splitlet.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "splitlet",
  "plugins": [
    {"type": "bridge", "bridge": "splitlet0", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
JSON
  fi
  "_containerd_config_$containerd_major" "$workdir" "$cni_bin" "$cni_conf" "$cni_template" >"$workdir/config.toml"
  if [ -n "$extra" ]; then
    cat "$extra" >>"$workdir/config.toml"
  fi
  containerd_log "starting containerd (config $workdir/config.toml, log $CONTAINERD_LOG)"
  containerd --config "$workdir/config.toml" >"$CONTAINERD_LOG" 2>&1 &
  CONTAINERD_PID=$!
  for _ in $(seq 1 100); do
    if ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; then
      export CONTAINERD_SOCK CONTAINERD_PID CONTAINERD_LOG CONTAINERD_DIR
      containerd_log "ready on $CONTAINERD_SOCK (pid $CONTAINERD_PID)"
      return 0
    fi
    if ! kill -0 "$CONTAINERD_PID" 2>/dev/null; then
      containerd_log "containerd exited; its log:"; cat "$CONTAINERD_LOG" >&2
      return 1
    fi
    sleep 0.1
  done
  containerd_log "containerd did not answer within 10 s; its log:"; tail -50 "$CONTAINERD_LOG" >&2
  return 1
}

containerd_import() {
  local f
  for f in "$@"; do
    ctr --address "$CONTAINERD_SOCK" -n k8s.io images import --all-platforms "$f" >/dev/null
  done
  ctr --address "$CONTAINERD_SOCK" -n k8s.io images ls -q >&2
}

containerd_stop() {
  [ -n "${CONTAINERD_SOCK:-}" ] || return 0
  if [ -n "${CONTAINERD_PID:-}" ] && kill -0 "$CONTAINERD_PID" 2>/dev/null; then
    local t
    for t in $(ctr --address "$CONTAINERD_SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$CONTAINERD_SOCK" -n k8s.io tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
    sleep 0.5
    kill "$CONTAINERD_PID" 2>/dev/null || true
    wait "$CONTAINERD_PID" 2>/dev/null || true
  fi
  # Shims outlive containerd by design; ours are the ones given our socket.
  pkill -KILL -f -- "-address $CONTAINERD_SOCK" 2>/dev/null || true
  if [ -n "${CONTAINERD_DIR:-}" ]; then
    awk -v d="$CONTAINERD_DIR" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  unset CONTAINERD_PID
}

# The containerds containerd_start_more started, for containerd_stop_all.
_ctrd_socks=() _ctrd_pids=() _ctrd_dirs=()

containerd_start_more() {
  local dir=$1
  shift
  containerd_start "$dir" >/dev/null
  containerd_import "$@" 2>/dev/null
  _ctrd_socks+=("$CONTAINERD_SOCK") _ctrd_pids+=("$CONTAINERD_PID") _ctrd_dirs+=("$CONTAINERD_DIR")
}

containerd_stop_all() {
  local j
  for j in "${!_ctrd_socks[@]}"; do
    CONTAINERD_SOCK=${_ctrd_socks[$j]} CONTAINERD_PID=${_ctrd_pids[$j]} CONTAINERD_DIR=${_ctrd_dirs[$j]}
    if [ "${SHOW_LOGS:-}" = 1 ] && [ -s "$CONTAINERD_DIR/containerd.log" ]; then
      containerd_log "---- $CONTAINERD_DIR/containerd.log (last 30 lines) ----"; tail -n 30 "$CONTAINERD_DIR/containerd.log" >&2
    fi
    containerd_stop
  done
}

containerd_exit_trap() {
  local rc=$?
  set +e
  SHOW_LOGS=$([ "$rc" -ne 0 ] && echo 1) containerd_stop_all
  exit "$rc"
}

containerd_mirrors() {
  local file=$1 dir=$2 registry=$3 host plugin=io.containerd.grpc.v1.cri
  shift 3
  for host in "$@"; do
    mkdir -p "$dir/$host"
    cat >"$dir/$host/hosts.toml" <<TOML
server = "https://$host"

[host."http://$registry"]
  capabilities = ["pull", "resolve"]
TOML
  done
  # The hosts directory rather than 1.x's registry.mirrors, which 2.x
  # deprecates (and for which it drops its transfer service's pull).
  [ "$containerd_major" = 2 ] && plugin=io.containerd.cri.v1.images
  cat >"$file" <<TOML

[plugins."$plugin".registry]
  config_path = "$dir"
TOML
}
