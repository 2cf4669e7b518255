#!/usr/bin/env bash
# Kubernetes' e2e suite against splitlet and against a real kubelet of the
# same version: `make conformance` (the full focus) and `make
# conformance-ci` (a focused subset, splitlet only, in CI).
#
# Outside any namespace it builds what the runs need: the control plane,
# kubectl, kubelet, e2e.test and ginkgo at KUBE_VERSION (hack/lib/kube.sh,
# cached in $SPLITLET_CACHE), the distribution registry (hack/lib/registry.sh),
# Debian's etcd-server, containerd, runc, CNI plugins and busybox-static, the
# e2e images (hack/conformance-images.sh) and splitlet's binaries. It then
# re-runs itself in a new network namespace (unshare --net) where it serves
# the images from a registry on $CONFORMANCE_REGISTRY, which the suite's
# KUBE_TEST_REPO_LIST puts in place of registry.k8s.io, and, for each node
# agent in turn, starts a fresh containerd with a CNI bridge (pause imported
# as its sandbox image; every other image is pulled) and runs
# bin/splitlet-conformance (package internal/conformance): a control plane
# and that one node, then the suite through ginkgo. Nothing listens outside
# the namespace.
#
#   hack/conformance.sh full   NodeConformance and sig-node/sig-storage
#                              Conformance, minus Serial/Disruptive/Flaky/Slow
#                              and hack/conformance-skips.txt, on both agents;
#                              prints both figures and the specs that pass on
#                              the kubelet only
#   hack/conformance.sh ci     the CI subset (pods, init containers, probes,
#                              hooks, configMap/secret/downward API volumes,
#                              in-place resize, image volumes)
#                              on splitlet alone; fails when a spec fails
#
# Must run as root. Environment:
#   CONFORMANCE_NODES   which agents, in order (default: "kubelet splitlet" for
#                       full, "splitlet" for ci)
#   CONFORMANCE_FOCUS   replaces the focus regular expression
#   CONFORMANCE_PROCS   parallel ginkgo processes (default 8: most specs wait
#                       on timers, so 8 on 2 cores took the CI subset from
#                       731 s at 6 to 592 s, all passing; CONFORMANCE.md)
#   CONFORMANCE_REGISTRY  the image registry's address in the namespace
#                       (default 127.0.0.1:5000)
#   CONFORMANCE_OUT     reports and logs (default _out/conformance); each
#                       agent's run is in OUT/AGENT, its report in
#                       OUT/AGENT/report/junit_01.xml
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[conformance] $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  log "must run as root: it installs packages, creates a network namespace and runs containerd"
  exit 1
fi

# The pause image of the e2e manifest, which hack/conformance-images.sh builds.
export CONTAINERD_PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"
# shellcheck source-path=SCRIPTDIR source=lib/registry.sh
source "$root/hack/lib/registry.sh"
registry=${CONFORMANCE_REGISTRY:-127.0.0.1:5000}

# The CI subset: the spec families the issue names (pods, init containers,
# probes, hooks, configMap/secret/downward API volumes) plus the container
# runtime, emptyDir, managed /etc/hosts, hostnameOverride and
# allowPrivilegeEscalation specs (NodeConformance), and the six in-place
# resize specs and the image volume pulled Always ([Conformance]), and the
# sidecars' lifecycle hooks (a sidecar past the last regular container once
# panicked sync; only the full run saw it). Both also run the RuntimeClass
# spec of a handler the runtime lacks ([Feature:RuntimeHandler], not
# NodeConformance: it needs a runtime without that handler, as both sides'
# containerd is): a node that ran the pod under its default handler instead
# fails it.
runtimeclass_focus='\[sig-node\] RuntimeClass should reject a Pod requesting a RuntimeClass with an unconfigured handler'
ci_focus='(\[sig-node\] (Pods |InitContainer|Probing container|Container Lifecycle Hook|Downward API |Container Runtime |KubeletManagedEtcHosts|Override hostname of Pod|Security Context when creating containers with AllowPrivilegeEscalation)|\[sig-storage\] (ConfigMap|Secrets|Downward API volume|Projected |EmptyDir )).*\[NodeConformance\]|\[sig-node\] (Pod InPlace Resize Container|ImageVolume) .*\[Conformance\]|\[NodeConformance\] \[FeatureGate:SidecarContainers\] Restartable Init Container Lifecycle Hook|'"$runtimeclass_focus"
# The full focus: NodeConformance, and the [Conformance] specs of sig-node and
# sig-storage (one node serves them all: the rest of [Conformance] needs
# several nodes or is about the control plane).
full_focus='\[NodeConformance\]|\[sig-(node|storage)\] .*\[Conformance\]|'"$runtimeclass_focus"
base_skip='\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]'

# skip_regex joins hack/conformance-skips.txt's patterns (one per line, #
# comments) with the base skip.
skip_regex() {
  local re=$base_skip line
  while IFS= read -r line; do
    line=${line%%#*}
    line=$(sed -e 's/[[:space:]]*$//' <<<"$line")
    [ -n "$line" ] && re+="|$line"
  done <"$root/hack/conformance-skips.txt"
  printf '%s' "$re"
}

# inner runs in the new network namespace: per agent, a fresh containerd
# and a run.
inner() {
  local workdir=$1 out=$2 focus=$3 skip=$4 agents=$5 agent rc=0 arc
  ip link set lo up
  # The node's address (internal/conformance.NodeIP): the kubelet refuses a
  # loopback one. TEST-NET-1 on lo, so nothing leaves the namespace.
  ip addr add 192.0.2.10/32 dev lo
  trap registry_stop EXIT
  registry_serve "$workdir/registry" "$registry"
  "$root/hack/conformance-images.sh" "$workdir/images" "$registry"
  # The suite names its images in this registry instead of registry.k8s.io
  # (test/utils/image/manifest.go); the invalid and private registries of
  # the pull-failure specs keep their names.
  cat >"$workdir/repo-list.yaml" <<YAML
promoterE2eRegistry: $registry/e2e-test-images
gcRegistry: $registry
YAML
  export KUBE_TEST_REPO_LIST=$workdir/repo-list.yaml
  for agent in $agents; do
    log "---- $agent ----"
    (
      trap containerd_stop EXIT
      CONTAINERD_WITH_CNI=1 containerd_start "$workdir/ctrd-$agent" >/dev/null
      containerd_import "$workdir/images/pause.tar" 2>/dev/null
      rm -rf "${out:?}/$agent"
      "$root/bin/splitlet-conformance" --node="$agent" --kube-bin="$KUBE_BIN_DIR" --bin="$root/bin" \
        --dir="$out/$agent" --runtime-endpoint="unix://$CONTAINERD_SOCK" \
        --focus="$focus" --skip="$skip" --procs="${CONFORMANCE_PROCS:-8}" \
        run >"$out/$agent.log" 2>&1
    ) && arc=0 || arc=$?
    log "$agent: exit $arc (log $out/$agent.log)"
    # 1: specs failed (the report says which); 2: the run itself failed.
    if [ "$arc" -ge 2 ]; then
      tail -n 40 "$out/$agent.log" >&2
      return 2
    fi
    sed -n '/specs run/,$p' "$out/$agent.log" >&2
    [ "$agent" = splitlet ] && rc=$arc
  done
  return "$rc"
}

if [ "${1:-}" = inner ]; then
  shift
  inner "$@"
  exit
fi

mode=${1:-}
case $mode in
  full) focus=${CONFORMANCE_FOCUS:-$full_focus} agents=${CONFORMANCE_NODES:-kubelet splitlet} ;;
  ci) focus=${CONFORMANCE_FOCUS:-$ci_focus} agents=${CONFORMANCE_NODES:-splitlet} ;;
  *) echo "usage: $0 full|ci" >&2; exit 2 ;;
esac
out=${CONFORMANCE_OUT:-$root/_out/conformance}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Short: unix socket paths are limited to 108 bytes.
workdir=$(mktemp -d /tmp/splitlet-cf.XXXXXX)
trap 'rm -rf "$workdir"' EXIT

start=$SECONDS
components=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
[[ " $agents " == *" kubelet "* ]] && components+=(kubelet)
kube_build "${components[@]}"
kube_build_e2e
kube_install_etcd
CONTAINERD_WITH_CNI=1 containerd_install
registry_build
log "building the e2e images and splitlet's binaries"
"$root/hack/conformance-images.sh" "$workdir/images"
make -C "$root" build >/dev/null
skip=$(skip_regex)
log "prepared in $((SECONDS - start)) s; running [$agents] in a new network namespace"
rc=0
unshare --net -- "$0" inner "$workdir" "$out" "$focus" "$skip" "$agents" || rc=$?
if [ "$rc" -lt 2 ] && [ -f "$out/kubelet/report/junit_01.xml" ] && [ -f "$out/splitlet/report/junit_01.xml" ]; then
  "$root/bin/splitlet-conformance" compare "$out/kubelet/report/junit_01.xml" "$out/splitlet/report/junit_01.xml" |
    tee "$out/comparison.txt" || true
fi
log "done in $((SECONDS - start)) s (exit $rc)"
exit "$rc"
