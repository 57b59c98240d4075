#!/usr/bin/env bash
# The test command: every step of noxfile.py (`nox --list`), with the pinned
# nox bootstrapped into .test/nox-venv (a stock Python has no nox). Arguments
# go to nox: bash scripts/test.sh -s fuzz -- --seconds 60
set -euo pipefail
cd "$(dirname "$0")/.."
NOX_VERSION=2026.10.20
VENV=.test/nox-venv
PYTHON=$(command -v python3.11 || command -v python3)
if [[ "$("$VENV/bin/nox" --version 2>&1)" != "$NOX_VERSION" ]]; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "nox==$NOX_VERSION"
fi
exec "$VENV/bin/nox" "$@"
