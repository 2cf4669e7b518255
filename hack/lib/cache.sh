# shellcheck shell=bash
# Where third-party builds (kube-apiserver, crictl and critest,
# metrics-server, containerd 2.x: hack/lib/containerd.sh) are cached:
# outside the clone, keyed by version, so a fresh clone and CI reuse them.
SPLITLET_CACHE=${SPLITLET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/splitlet}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.30.0}
CRI_TOOLS_DIR=$SPLITLET_CACHE/cri-tools-$CRI_TOOLS_VERSION
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
METRICS_SERVER_BIN=$SPLITLET_CACHE/metrics-server-$METRICS_SERVER_VERSION/metrics-server
