#!/usr/bin/env bash
# Build the images Kubernetes' e2e specs run, under the exact names of the
# suite's image manifest (test/utils/image/manifest.go of KUBE_VERSION), as
# OCI layout tarballs for `ctr -n k8s.io images import`: pods pull them
# IfNotPresent, so no registry is needed. What each real image holds that the
# chosen specs use is rebuilt from files on this machine:
#
#   agnhost:2.63.0 (and 2.55)  the agnhost binary built from the Kubernetes
#                              module (hack/lib/kube.sh kube_build_agnhost) at
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
#   busybox:1.37.0-1           Debian's static busybox, CMD sh
#   nonroot:1.5                the same with USER 1234
#   glibc-dns-testing:2.0.0    the same, CMD sh: the HostnameOverride specs
#                              run `hostname` and `hostname -f`, which
#                              busybox answers from the UTS name and
#                              /etc/hosts (the DNS specs that need its dig
#                              are sig-network, not in the focus)
#   registry.k8s.io/pause:3.10.2  splitlet's static pause (hack/images.sh)
#
# Not built (their specs are in hack/conformance-skips.txt): nginx, httpd,
# nonewprivs (a setuid binary), kitten/nautilus, and agnhost's other alpine
# tools (real curl and bash, dig, iperf).
#
#   hack/conformance-images.sh OUTDIR   writes OUTDIR/{pause,busybox,agnhost,nonroot,glibc-dns-testing}.tar
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/kube.sh
source "$root/hack/lib/kube.sh"
mkdir -p "$1"
out=$(cd "$1" && pwd)
busybox=${BUSYBOX:-/bin/busybox}
e2e=registry.k8s.io/e2e-test-images

kube_build_agnhost
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2 BUSYBOX_IMAGES="$e2e/busybox:1.37.0-1" \
  "$root/hack/images.sh" "$out" >/dev/null
mkimage=$out/bin/mkimage
porter=$KUBE_DIR/src/test/images/agnhost/porter

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
"$mkimage" -ref "$e2e/agnhost:2.63.0" -ref "$e2e/agnhost:2.55" -busybox "$busybox" \
  -file "$KUBE_BIN_DIR/agnhost:/agnhost" -symlink /agnhost-2:agnhost \
  -file "$porter/localhost.crt:/localhost.crt" -file "$porter/localhost.key:/localhost.key" \
  -file "$out/curl:/usr/bin/curl" -file "$out/bash:/bin/bash" -file "$out/agnhost-passwd:/etc/passwd" -file "$out/agnhost-group:/etc/group" -dir /uploads \
  -entrypoint /agnhost -cmd pause -o "$out/agnhost.tar"
"$mkimage" -ref "$e2e/nonroot:1.5" -busybox "$busybox" -user 1234 -cmd sh -o "$out/nonroot.tar"
"$mkimage" -ref "$e2e/glibc-dns-testing:2.0.0" -busybox "$busybox" -cmd sh -o "$out/glibc-dns-testing.tar"
echo "conformance-images.sh: wrote $out/{pause,busybox,agnhost,nonroot,glibc-dns-testing}.tar" >&2
