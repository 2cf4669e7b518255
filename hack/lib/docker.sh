# shellcheck shell=bash
# Functions to run a private Docker engine for splitlet's compose stack: its own
# data root, exec root, pidfile and socket under one directory, so it never
# touches an engine the machine may already run. Source this file.
#
#   docker_install        apt-get install docker.io and docker-compose if absent
#   docker_start DIR      start dockerd with everything under DIR (unless an
#                         engine already answers at DOCKER_HOST or the default
#                         socket: then use it and leave it alone), wait for
#                         `docker info`; exports
#                         DOCKER_HOST, DOCKER_LOG and DOCKERD_PID (empty when the
#                         engine was not ours)
#   docker_stop           stop the dockerd docker_start started, nothing else
#   docker_compose ARGS   run the compose CLI chosen by DOCKER_COMPOSE_CLI
#                         ("v1": docker-compose 1.29, default; "v2": docker compose)
#   docker_compose_v2_available  true when the `docker compose` plugin is present
#   docker_add_compose_plugin BIN  use BIN as the `docker compose` plugin here
#
# DIR should be a short path: the engine's unix sockets live under it and a unix
# socket path is limited to 108 bytes. Reusing DIR between runs keeps the image
# build cache, which is what makes a warm run fast.
#
# What dockerd needs on these machines (checked by hand, see
# ../shared/ENVIRONMENT.md): root; iptables (Debian's nf_tables iptables works, so
# the default bridge network and published ports work); overlay2 works on the ext4
# root, vfs is the fallback (set DOCKER_STORAGE_DRIVER) for filesystems overlay
# cannot sit on. dockerd starts its own containerd under the exec root, separate
# from the containerd the stack runs inside its image.

docker_log() { echo "[docker] $*" >&2; }

_docker_apt_updated=""
_docker_apt_install() {
  if [ -z "$_docker_apt_updated" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    _docker_apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

docker_install() {
  local missing=()
  # A `docker` CLI alone (e.g. /usr/local/bin/docker) is not an engine: look for
  # dockerd itself.
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  if [ ${#missing[@]} -gt 0 ]; then
    docker_log "installing ${missing[*]} from Debian"
    _docker_apt_install "${missing[@]}"
  fi
}

docker_compose_v2_available() {
  docker compose version >/dev/null 2>&1
}

# docker_add_compose_plugin BIN makes BIN (a compose v2 binary) the `docker
# compose` plugin of this shell only, through a private DOCKER_CONFIG, so the
# machine's docker configuration is left alone. Debian bookworm packages no
# compose v2; one builds from the Go module proxy (see deploy/images/README.md).
docker_add_compose_plugin() {
  local bin cfg
  bin=$(readlink -f "$1")
  cfg=${DOCKER_DIR:-$(mktemp -d)}/cli-config
  mkdir -p "$cfg/cli-plugins"
  ln -sf "$bin" "$cfg/cli-plugins/docker-compose"
  export DOCKER_CONFIG=$cfg
}

docker_compose() {
  case "${DOCKER_COMPOSE_CLI:-v1}" in
    v1) docker-compose "$@" ;;
    v2) docker compose "$@" ;;
    *) docker_log "DOCKER_COMPOSE_CLI must be v1 or v2, not ${DOCKER_COMPOSE_CLI}"; return 2 ;;
  esac
}

docker_start() {
  local dir=$1
  DOCKERD_PID=""
  # An engine someone else runs (DOCKER_HOST, else the default socket) is used as
  # is and never stopped: a second dockerd would fight it over docker0 and the
  # DOCKER iptables chains.
  if [ -n "${DOCKER_HOST:-}" ] && docker info >/dev/null 2>&1; then
    docker_log "using the running engine at $DOCKER_HOST"
    export DOCKER_HOST DOCKERD_PID
    return 0
  fi
  if [ -z "${DOCKER_HOST:-}" ] && [ -S /var/run/docker.sock ] &&
     DOCKER_HOST=unix:///var/run/docker.sock docker info >/dev/null 2>&1; then
    DOCKER_HOST=unix:///var/run/docker.sock
    docker_log "using the running engine at $DOCKER_HOST"
    export DOCKER_HOST DOCKERD_PID
    return 0
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  DOCKER_DIR=$dir
  DOCKER_HOST=unix://$dir/docker.sock
  DOCKER_LOG=$dir/dockerd.log
  local pidfile=$dir/docker.pid
  # Our own engine left over from an interrupted run: reuse it if it answers.
  if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null &&
     DOCKER_HOST=$DOCKER_HOST docker info >/dev/null 2>&1; then
    DOCKERD_PID=$(cat "$pidfile")
    docker_log "reusing dockerd pid $DOCKERD_PID on $DOCKER_HOST"
    export DOCKER_HOST DOCKERD_PID DOCKER_LOG DOCKER_DIR
    return 0
  fi
  rm -f "$pidfile" "$dir/docker.sock"
  local driver=${DOCKER_STORAGE_DRIVER:-overlay2}
  docker_log "starting dockerd (data $dir/data, storage $driver, log $DOCKER_LOG)"
  dockerd \
    --data-root "$dir/data" \
    --exec-root "$dir/x" \
    --pidfile "$pidfile" \
    --host "$DOCKER_HOST" \
    --storage-driver "$driver" \
    >"$DOCKER_LOG" 2>&1 &
  DOCKERD_PID=$!
  export DOCKER_HOST DOCKERD_PID DOCKER_LOG DOCKER_DIR
  for _ in $(seq 1 300); do
    if docker info >/dev/null 2>&1; then
      docker_log "ready on $DOCKER_HOST (pid $DOCKERD_PID, $(docker version -f '{{.Server.Version}}' 2>/dev/null))"
      return 0
    fi
    if ! kill -0 "$DOCKERD_PID" 2>/dev/null; then
      docker_log "dockerd exited; its log:"; tail -50 "$DOCKER_LOG" >&2
      DOCKERD_PID=""
      return 1
    fi
    sleep 0.1
  done
  docker_log "dockerd did not answer within 30 s; its log:"; tail -50 "$DOCKER_LOG" >&2
  return 1
}

docker_stop() {
  [ -n "${DOCKERD_PID:-}" ] || return 0
  if kill -0 "$DOCKERD_PID" 2>/dev/null; then
    kill -TERM "$DOCKERD_PID" 2>/dev/null || true
    for _ in $(seq 1 150); do
      kill -0 "$DOCKERD_PID" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$DOCKERD_PID" 2>/dev/null; then
      docker_log "dockerd pid $DOCKERD_PID still running after 15 s; killing it"
      kill -KILL "$DOCKERD_PID" 2>/dev/null || true
    fi
    wait "$DOCKERD_PID" 2>/dev/null || true
  fi
  # dockerd leaves its exec root's mounts (netns files) behind when killed.
  if [ -n "${DOCKER_DIR:-}" ]; then
    awk -v d="$DOCKER_DIR/x" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  DOCKERD_PID=""
}
