# shellcheck shell=bash
# Sourced first by the scripts that work in the checkout (test.sh, fuzz.sh,
# sanitize.sh, sdist-check.sh, asv-check.sh): strict mode, and ROOT, the
# checkout, as the working directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# install_debian_packages WHO PACKAGE...: apt-get installs the packages given
# (none: nothing to do) as root; otherwise WHO stops and names them.
install_debian_packages() {
    local who=$1
    shift
    (($#)) || return 0
    if [[ $(id -u) != 0 ]]; then
        echo "$who: needs the Debian packages $*: run as root, or apt-get install them" >&2
        exit 1
    fi
    apt-get update -qq -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "$@" >/dev/null
}
