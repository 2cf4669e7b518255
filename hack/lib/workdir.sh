# shell cleanup for the e2e scripts that prepare outside a network namespace
# and run inside one. Source this file.
#
#   e2e_workdir PREFIX   make a short temporary directory (unix socket paths
#                        are limited to 108 bytes) in $workdir and remove it on
#                        exit, unless SPLITLET_E2E_KEEP=1; say FAILED on a
#                        failing exit; INT and TERM end the script through it.

e2e_workdir() {
  workdir=$(mktemp -d "/tmp/$1.XXXXXX")
  _e2e_name=${2:-$(basename "$0" .sh)}
  trap _e2e_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

_e2e_cleanup() {
  local rc=$?
  set +e
  [ "$rc" -eq 0 ] || echo "[$_e2e_name] FAILED (exit $rc)" >&2
  if [ "${SPLITLET_E2E_KEEP:-}" = 1 ]; then
    echo "[$_e2e_name] kept $workdir" >&2
  else
    rm -rf "$workdir"
  fi
  exit "$rc"
}
