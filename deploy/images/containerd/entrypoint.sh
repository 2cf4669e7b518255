#!/bin/sh
# Entrypoint of the splitlet/containerd image: write containerd's config, start
# containerd, import the image tarballs baked into /images (no registry is
# reachable, so the pause and busybox images must be local), then stay in the
# foreground with containerd. Runs under busybox sh.
#
# The config mirrors hack/lib/containerd.sh: restrict_oom_score_adj because the
# compose file drops CAP_SYS_RESOURCE (without it every sandbox fails with
# "can't get final child's PID from pipe"), AppArmor off (not available to
# nested runc), cgroupfs (no systemd in the container).
#
# Environment:
#   CONTAINERD_SOCKET       gRPC socket, in the volume shared with the gateway
#                           (default /run/containerd/containerd.sock)
#   CONTAINERD_PAUSE_IMAGE  sandbox_image (default registry.k8s.io/pause:3.10)
#   CONTAINERD_LOG_LEVEL    default info
set -eu

sock=${CONTAINERD_SOCKET:-/run/containerd/containerd.sock}
pause=${CONTAINERD_PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
# State (runc state, shim sockets, sandbox /dev/shm mounts) stays private to this
# container; only the gRPC socket goes to the shared volume.
state=/run/containerd-state
mkdir -p "$(dirname "$sock")" "$state" /etc/containerd /var/lib/containerd /tmp
rm -f "$sock" "$sock.ttrpc"

cat >/etc/containerd/config.toml <<TOML
version = 2
root = "/var/lib/containerd"
state = "$state"

[grpc]
  address = "$sock"

[ttrpc]
  address = "$state/containerd.sock.ttrpc"

[debug]
  level = "${CONTAINERD_LOG_LEVEL:-info}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  # Streams are served on this container's address on the compose network
  # (empty: the default route's interface), not on its loopback: the
  # gateway, in its own container, proxies them.
  stream_server_address = ""

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false
TOML

containerd --config /etc/containerd/config.toml &
pid=$!
# On `compose stop` docker signals PID 1 only; pass it on so containerd shuts
# down cleanly. The shims and pods die with this container's PID namespace.
trap 'kill -TERM $pid 2>/dev/null' TERM INT

i=0
until ctr --address "$sock" version >/dev/null 2>&1; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "entrypoint: containerd exited before answering" >&2
    exit 1
  fi
  i=$((i + 1))
  if [ "$i" -ge 300 ]; then
    echo "entrypoint: containerd did not answer within 30 s" >&2
    exit 1
  fi
  sleep 0.1
done

for f in /images/*.tar; do
  [ -e "$f" ] || continue
  ctr --address "$sock" -n k8s.io images import --all-platforms "$f" >/dev/null
  echo "entrypoint: imported $f" >&2
done
# The healthcheck looks for this file: containerd answers and the images are in.
touch "$state/ready"
echo "entrypoint: containerd ready on $sock" >&2

# `wait` returns early when the trap fires; wait again for containerd to exit.
set +e
wait "$pid"
rc=$?
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
  rc=$?
done
exit "$rc"
