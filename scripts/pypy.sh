#!/usr/bin/env bash
# Build cb3 with PyPy 3.11 (Debian 13's PyPy 7.3.19, hybrid ABI against PyPy's
# own HPy headers) in a chroot and run the test suite with it:
#
#   sudo scripts/pypy.sh [pytest args...]     e.g. scripts/pypy.sh -x -k smoke
#
# The work is scripts/chroot-test.sh's pypy3.11 profile (shared with the
# CPython 3.14 run); see there for the steps and the environment variables.
# Timing on the 2-core reference VM: about 115 s cold (empty cache: chroot
# 21 s, venv with blake3-py built from source 55 s, build 6 s, tests 30 s),
# about 35 s warm.
exec bash "$(dirname "${BASH_SOURCE[0]}")/chroot-test.sh" pypy3.11 "$@"
