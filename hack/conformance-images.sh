#!/usr/bin/env bash
# Build the images Kubernetes' e2e specs run, under the exact names of the
# suite's image manifest (test/utils/image/manifest.go of KUBE_VERSION), as
# OCI layout tarballs and, given a registry, pushed to it (hack/conformance.sh
# runs one in its network namespace; the suite's pods pull from it). What each
# real image holds that the chosen specs use is rebuilt from files on this
# machine:
#
#   agnhost:2.63.0 (and 2.55)  the agnhost binary built from the Kubernetes
#                              module (hack/lib/kube.sh kube_build_image_binary) at
#                              /agnhost, /agnhost-2 -> agnhost, porter's
#                              /localhost.crt and .key, /uploads, the user
#                              user-defined-in-image (1000) in group
#                              group-defined-in-image (50000), and busybox's
#                              applets for sh, cat, nc, wget; /usr/bin/curl
#                              is busybox wget printing the body (the specs'
#                              `curl [-g -q -s] URL`), /bin/bash is busybox
#                              ash (the specs' scripts are POSIX with
#                              `trap`); ENTRYPOINT /agnhost,
#                              CMD pause, as its Dockerfile
#   kitten:1.8                 agnhost's content (kitten is built FROM it) with
#                              the kitten.jpg and data.json of
#                              test/images/kitten, CMD test-webserver
#   busybox:1.37.0-1           Debian's static busybox, CMD sh
#   nonroot:1.5                the same with USER 1234
#   nonewprivs:1.4             the same with test/images/nonewprivs' binary
#                              (prints its effective uid) setuid root at
#                              /usr/local/bin/nnp, CMD nnp
#   glibc-dns-testing:2.0.0    the same, CMD sh: the HostnameOverride specs
#                              run `hostname` and `hostname -f`, which
#                              busybox answers from the UTS name and
#                              /etc/hosts (the DNS specs that need its dig
#                              are sig-network, not in the focus)
#   registry.k8s.io/pause:3.10.2  splitlet's static pause (hack/images.sh)
#
# The real agnhost, kitten and nonewprivs are built FROM Alpine, and the
# ImageVolume spec reads /etc/os-release through an image volume expecting
# "Alpine Linux": their stand-ins carry an /etc/os-release that says they
# stand in for an Alpine Linux image, not that they are one.
#
# Not built (their specs are in hack/conformance-skips.txt or outside the
# focus): nginx, httpd, nautilus, and agnhost's other alpine tools (real curl
# and bash, dig, iperf).
#
#   hack/conformance-images.sh OUTDIR [REGISTRY]
#       writes OUTDIR/{pause,busybox,agnhost,kitten,nonroot,nonewprivs,glibc-dns-testing}.tar;
#       with REGISTRY (HOST:PORT, plain HTTP) also pushes every image there
#       under its name with registry.k8s.io replaced by REGISTRY, the mapping
#       hack/conformance.sh gives the suite in KUBE_TEST_REPO_LIST
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 OUTDIR [REGISTRY]" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"
mkdir -p "$1"
out=$(cd "$1" && pwd)
busybox=${BUSYBOX:-/bin/busybox}
e2e=registry.k8s.io/e2e-test-images

registry=${2:-}
push=()
if [ -n "$registry" ]; then push=(-push-registry "$registry"); fi

kube_build_image_binary agnhost
kube_build_image_binary nonewprivs
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2 BUSYBOX_IMAGES="$e2e/busybox:1.37.0-1" PUSH_REGISTRY=$registry \
  "$root/hack/images.sh" "$out" >/dev/null
mkimage=$out/bin/mkimage
porter=$KUBE_DIR/src/test/images/agnhost/porter
kitten=$KUBE_DIR/src/test/images/kitten/html

cat >"$out/agnhost-passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh
PASSWD
cat >"$out/agnhost-group" <<'GROUP'
root:x:0:
nobody:x:65534:
user-defined-in-image:x:1000:
group-defined-in-image:x:50000:user-defined-in-image
GROUP
cat >"$out/curl" <<'CURL'
#!/bin/sh
# curl [-g -q -s ...] URL, as the e2e specs call it (hooks, DialFromContainer):
# busybox wget printing the body. Flags change nothing here and are dropped.
url=
for a in "$@"; do
  case $a in
  -*) ;;
  *) url=$a ;;
  esac
done
exec wget -q -O - "$url"
CURL
printf '#!/bin/sh\n# bash -c SCRIPT, as the e2e specs call it: busybox ash.\nexec /bin/ash "$@"\n' >"$out/bash"
chmod 0755 "$out/curl" "$out/bash"
cat >"$out/os-release" <<'OSRELEASE'
NAME="splitlet e2e image"
ID=splitlet-e2e
PRETTY_NAME="splitlet's busybox stand-in for an Alpine Linux e2e image"
OSRELEASE
# agnhost as its Dockerfile builds it; kitten adds two files on top.
agnhost=(-busybox "$busybox" -file "$out/os-release:/etc/os-release"
  -file "$KUBE_BIN_DIR/agnhost:/agnhost" -symlink /agnhost-2:agnhost
  -file "$porter/localhost.crt:/localhost.crt" -file "$porter/localhost.key:/localhost.key"
  -file "$out/curl:/usr/bin/curl" -file "$out/bash:/bin/bash"
  -file "$out/agnhost-passwd:/etc/passwd" -file "$out/agnhost-group:/etc/group" -dir /uploads)
"$mkimage" -ref "$e2e/agnhost:2.63.0" -ref "$e2e/agnhost:2.55" "${agnhost[@]}" \
  -entrypoint /agnhost -cmd pause "${push[@]}" -o "$out/agnhost.tar"
"$mkimage" -ref "$e2e/kitten:1.8" "${agnhost[@]}" \
  -file "$kitten/kitten.jpg:/kitten.jpg" -file "$kitten/data.json:/data.json" \
  -entrypoint /agnhost -cmd test-webserver "${push[@]}" -o "$out/kitten.tar"
"$mkimage" -ref "$e2e/nonroot:1.5" -busybox "$busybox" -user 1234 -cmd sh "${push[@]}" -o "$out/nonroot.tar"
"$mkimage" -ref "$e2e/nonewprivs:1.4" -busybox "$busybox" -file "$out/os-release:/etc/os-release" \
  -file "$KUBE_BIN_DIR/nonewprivs:/usr/local/bin/nnp:4755" -cmd nnp "${push[@]}" -o "$out/nonewprivs.tar"
"$mkimage" -ref "$e2e/glibc-dns-testing:2.0.0" -busybox "$busybox" -cmd sh "${push[@]}" -o "$out/glibc-dns-testing.tar"
echo "conformance-images.sh: wrote $out/{pause,busybox,agnhost,kitten,nonroot,nonewprivs,glibc-dns-testing}.tar${registry:+ and pushed them to $registry}" >&2
