#!/usr/bin/env bash
# The sdist is complete and works the way a user meets it:
#   1. builds the sdist (setuptools' PEP 517 hook, with the test venv's setuptools)
#      and checks its file list: every tracked file that a build or the tests
#      need is in it (tests' conftest/helpers/reference, tests/c, tests/data,
#      tests/requirements.txt, docs, examples, licences), and no build debris;
#   2. in a fresh venv (stock pip, build isolation: pip fetches setuptools and
#      hpy as pyproject.toml pins them), builds a wheel from the sdist and
#      installs it (what `pip install cb3-*.tar.gz` does), then
#      `python -P -m cb3 selftest` (the README's self-check);
#   3. unpacks the sdist and runs a few test files from the unpacked tree
#      against that install (pytest imports the installed cb3, not the tree);
#   4. builds examples/downstream from the unpacked tree the way its README
#      says: `pip install -r requirements-build.txt`, then
#      `pip install --no-build-isolation .`, and calls it.
# Usage: CB3_PYTHON=.test/venv/bin/python bash scripts/sdist-check.sh
# Writes only under $CB3_TEST_DIR (default .test/sdist); the checkout stays clean.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PY="${CB3_PYTHON:?CB3_PYTHON: a python with the test requirements (scripts/test.sh sets it)}"
BASE="${PYTHON:-python3.11}"
WORK="${CB3_TEST_DIR:-$ROOT/.test}/sdist"
START=$SECONDS
log() { printf '[sdist-check %3ds] %s\n' $((SECONDS - START)) "$*"; }

rm -rf "$WORK"
mkdir -p "$WORK/dist"

log "build the sdist"
"$PY" -c 'import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])' "$WORK/dist" \
    >"$WORK/sdist-build.log" 2>&1 || { cat "$WORK/sdist-build.log"; exit 1; }
SDIST=$(ls "$WORK"/dist/cb3-*.tar.gz)
log "$(basename "$SDIST"): $(du -k "$SDIST" | cut -f1) KiB"

log "file list"
"$PY" - "$SDIST" <<'EOF'
import subprocess, sys, tarfile
from pathlib import PurePosixPath

with tarfile.open(sys.argv[1]) as tar:
    names = {str(PurePosixPath(*PurePosixPath(n).parts[1:])) for n in tar.getnames()}
required = [
    "README.md", "LICENSE", "pyproject.toml", "setup.py", "MANIFEST.in",
    "tests/conftest.py", "tests/helpers.py", "tests/reference.py", "tests/requirements.txt",
    "tests/typing_examples.py", "tests/c/run.sh", "tests/data/blake3_test_vectors.json",
    "docs/development.md", "docs/performance.md", "examples/downstream/requirements-build.txt",
    "third_party/NOTICES.md", "third_party/hpy/LICENSE", "rustlib/Cargo.lock",
]
missing = [name for name in required if name not in names]
tracked = subprocess.run(["git", "ls-files", "cb3", "cext", "rustlib/src", "rustlib/include", "rustlib/examples", "tests", "docs",
                          "examples", "third_party"], capture_output=True, text=True, check=True).stdout.split()
missing += [name for name in tracked if name not in names]
junk_dirs = {".git", ".test", ".hypothesis", ".pytest_cache", ".mypy_cache", "__pycache__", "build", "target"}
debris = [n for n in names if n.endswith((".so", ".o", ".pyc")) or junk_dirs & set(n.split("/"))
          or n.startswith(("cb3/include/", "cb3/lib/"))]
if missing or debris:
    sys.exit(f"sdist: missing {missing}; should not contain {debris}")
print(f"{len(names)} entries; all {len(tracked)} tracked package/test/doc files and {len(required)} required files present")
EOF

log "fresh venv: build a wheel from the sdist (build isolation) and install it, python -P -m cb3"
"$BASE" -m venv "$WORK/venv"
# What `pip install cb3-*.tar.gz` does, with the wheel kept for the second venv below.
"$WORK/venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$WORK/wheel" "$SDIST"
WHEEL=$(ls "$WORK"/wheel/cb3-*.whl)
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check "$WHEEL"
(cd "$WORK" && "$WORK/venv/bin/python" -P -m cb3 selftest --no-throughput)

log "unpacked sdist: tests against that install"
tar -xzf "$SDIST" -C "$WORK"
TREE=$(ls -d "$WORK"/cb3-*/)
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check -r "$TREE/tests/requirements.txt"
# The C tests and the crate interop test build rustlib in debug mode with cargo: share
# the checkout's target directory (ignored by git) so only the cb3 crate is recompiled.
(cd "$TREE" && CB3_C_TARGET_DIR="${CB3_C_TARGET_DIR:-$ROOT/rustlib/target}" "$WORK/venv/bin/pytest" -q -p no:cacheprovider \
    tests/test_vectors.py tests/test_api_surface.py tests/test_cli.py tests/test_typing.py tests/test_readme.py \
    tests/test_c_api.py tests/test_interop_crate.py)

log "examples/downstream from the unpacked sdist, as its README says"
python_only="$WORK/venv-downstream"  # a fresh venv with nothing but cb3
"$BASE" -m venv "$python_only"
"$python_only/bin/pip" install --quiet --disable-pip-version-check "$WHEEL"
(cd "$TREE/examples/downstream" &&
    "$python_only/bin/pip" install --quiet --disable-pip-version-check -r requirements-build.txt &&
    "$python_only/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation .)
(cd "$WORK" && "$python_only/bin/python" -P -c '
import cb3, cb3_downstream
key, nonce = cb3.generate_key(), cb3.generate_nonce()
assert cb3_downstream.encrypt_many(key, nonce, [b"hi"]) == [cb3.Stream(key, nonce).encrypt(b"hi")]
print("examples/downstream: built and agrees with cb3")')

rm -rf "$WORK/venv" "$python_only" "$TREE/build"   # 260 MB; kept only when a step fails
log "done"
