#!/usr/bin/env bash
# The documentation site, built and checked (scripts/test.sh runs this after
# mypy; docs/conf.py says what the site is made of):
#   1. installs docs/requirements.txt (Sphinx, MyST, dask.distributed; pinned)
#      into the venv of CB3_PYTHON, which has cb3 installed (autodoc documents
#      the installed package), and Debian's chromium (Python's inventory for
#      intersphinx ships in docs/_inventories)
#   2. sphinx-build -W -n (warnings are errors, nitpicky): html, then doctest
#      (every ```python block of every page, the README's included, runs)
#   3. the site's own links: every relative link of every built page leads
#      to a file of the site and an existing anchor (docs/_ext/cb3_pagecheck.py
#      links; Sphinx's linkcheck checks only off-site URLs, and this machine
#      has no network)
#   4. the at-scale recipe on a real dask LocalCluster and a process pool
#      (tests/test_at_scale.py, which skips where dask is absent)
#   5. headless Chromium, every host unresolvable: the index, an API page and
#      the C API page must show their content (docs/_ext/cb3_pagecheck.py)
# Usage: CB3_PYTHON=<python with cb3 installed> [CB3_TEST_DIR=.test] bash scripts/docs-check.sh
# Writes only under $CB3_TEST_DIR/docs (and ~/.cache/pip); the site is
# $CB3_TEST_DIR/docs/html/index.html.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
WORK="${CB3_TEST_DIR:-$ROOT/.test}"
PY="${CB3_PYTHON:-$WORK/venv/bin/python}"
OUT="$WORK/docs"
STARTED=$SECONDS
lap() { printf '    [docs-check] %-44s %3d s\n' "$1" $((SECONDS - STARTED)); }

NEED=()
# Python's inventory ships in docs/_inventories (no python3-doc needed).
command -v chromium >/dev/null || NEED+=(chromium)
install_debian_packages docs-check "${NEED[@]}"
"$PY" -m pip install --quiet --disable-pip-version-check -r docs/requirements.txt
lap "installs"

rm -rf "$OUT"
mkdir -p "$OUT"
BIN="$(dirname "$PY")"
# Run from $OUT: the checkout's cb3/ (no extension built there) must not
# shadow the installed package; conf.py finds its files from its own path.
sphinx() { (cd "$OUT" && "$BIN/sphinx-build" -q -W --keep-going -n -E "$@"); }
sphinx -b html -d "$OUT/doctrees-html" "$ROOT/docs" "$OUT/html"
lap "sphinx-build -W -n -b html"
sphinx -b doctest -d "$OUT/doctrees-doctest" "$ROOT/docs" "$OUT/doctest" || { cat "$OUT/doctest/output.txt"; exit 1; }
grep -E '^ +[0-9]+ tests$' "$OUT/doctest/output.txt" | sed 's/^ */    doctest: /'
lap "sphinx-build -W -n -b doctest"
"$PY" docs/_ext/cb3_pagecheck.py links "$OUT/html"
lap "internal links"

"$BIN/pytest" tests/test_at_scale.py -q -p no:cacheprovider
lap "at-scale recipe (dask LocalCluster, process pool)"

CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars
        --user-data-dir="$OUT/chromium" --host-resolver-rules="MAP * ~NOTFOUND"
        --allow-file-access-from-files --window-size=1280,1600 --virtual-time-budget=5000)
# page NAME PATH TEXT...: DOM and screenshot of the built PATH, then what it must show.
CHECKS=()
page() {
    local name=$1 path=$2
    shift 2
    "${CHROME[@]}" --dump-dom "file://$OUT/html/$path" >"$OUT/$name.dom.html" 2>>"$OUT/chromium.log"
    "${CHROME[@]}" --screenshot="$OUT/$name.png" "file://$OUT/html/$path" >>"$OUT/chromium.log" 2>&1
    CHECKS+=("$OUT/$name.dom.html" "$OUT/$name.png" "$@" --)
}
page index index.html "Fast, committing authenticated encryption" "Quickstart" "python -m cb3 keygen" \
    'href="reference/index.html"' 'href="guides/at-scale.html"'
page api reference/cb3.html 'id="cb3.ChaCha20Blake3.encrypt"' "Buffer" "glossary.html#term-bytes-like-object" \
    "max_threads" "Immutable and safe to share between threads"
page capi reference/c-api.html 'id="c.cb3_aead_encrypt"' 'id="c.cb3_chunked_seal"' 'CB3_RESULT_OK' \
    "CB3_KEY_SIZE" "On failure nothing is written"
"$PY" docs/_ext/cb3_pagecheck.py pages "${CHECKS[@]}"
lap "headless chromium: index, API and C API pages"
echo "docs-check: passed in $((SECONDS - STARTED)) s; the site: $OUT/html/index.html"
