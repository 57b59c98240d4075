# shellcheck shell=bash
# Sourced first by the scripts that work in the checkout (test.sh, fuzz.sh,
# sanitize.sh, sdist-check.sh, asv-check.sh): strict mode, and ROOT, the
# checkout, as the working directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
