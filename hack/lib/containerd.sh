# shellcheck shell=bash
# Functions to run a private containerd for splitlet's tests: its own root, state,
# socket and config under one work directory, so it never touches a containerd the
# machine may already run. Source this file; every function is idempotent.
#
#   containerd_install            apt-get install containerd runc busybox-static if absent
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

_apt_updated=""
_apt_install() {
  if [ -z "$_apt_updated" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    _apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

containerd_install() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
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
  cat >"$workdir/config.toml" <<TOML
version = 2
root = "$workdir/root"
state = "$workdir/state"

[grpc]
  address = "$CONTAINERD_SOCK"

[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"

[debug]
  address = "$CONTAINERD_SOCK.debug"

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
  bin_dir = "$cni_bin"
  conf_dir = "$cni_conf"
  conf_template = "$cni_template"
TOML
  if [ -n "$extra" ]; then
    cat "$extra" >>"$workdir/config.toml"
  fi
  containerd_log "starting containerd (config $workdir/config.toml, log $CONTAINERD_LOG)"
  containerd --config "$workdir/config.toml" >"$CONTAINERD_LOG" 2>&1 &
  CONTAINERD_PID=$!
  local i
  for i in $(seq 1 100); do
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
