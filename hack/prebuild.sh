#!/usr/bin/env bash
# `make prebuild`: build every third-party binary the suites use into
# $SPLITLET_CACHE (hack/lib/cache.sh), in the order .ci/run's steps first
# need them, and print how long each took. Builds from the Go module proxy
# only; installs nothing with apt (a second apt-get beside a suite's would
# fail on dpkg's lock).
#
# .ci/run runs it as a step of its own before the suites, so a cold
# machine's extra cost shows as one step and the suites' durations are the
# same cold and warm. Each build holds the lock the suites' own builds take
# (cache_ensure), so it can also run beside them (`make prebuild` in another
# terminal): a suite that needs a binary still being built waits for that
# build instead of starting a second one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/containerd.sh
source "$root/hack/lib/containerd.sh"
# shellcheck source-path=SCRIPTDIR source=lib/registry.sh
source "$root/hack/lib/registry.sh"
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"

timed() {
	local start=$SECONDS
	"$@"
	printf 'prebuild: %s: %d s\n' "$*" $((SECONDS - start)) >&2
}

start=$SECONDS
timed containerd_build                        # make e2e
timed critools_build                          # make critest, make compose-e2e
timed registry_build                          # make critest
timed kube_build kube-apiserver kubectl       # make apiserver-e2e
timed metrics_server_build                    # make apiserver-e2e
timed kube_build kube-controller-manager kube-scheduler kubelet # cluster-, daemonset-e2e
timed kube_build_e2e                          # make conformance-ci
timed kube_build_image_binary agnhost         # its images
timed kube_build_image_binary nonewprivs
printf 'prebuild: everything in %s in %d s\n' "$SPLITLET_CACHE" $((SECONDS - start)) >&2
