#!/usr/bin/env bash
# asv as a tracker, checked end to end (scripts/test.sh runs this; see
# docs/performance.md, section asv). Nothing here times cb3 or judges a figure.
#   1. asv check: the suite imports and its params are valid
#   2. smoke: every benchmark called once per parameter up to 64 KiB, in one process
#   3. a quick asv run of a slice of the suite on the installed cb3, recorded
#      for HEAD beside a copy of the committed baseline (asv_benchmarks/results/
#      itself is never written)
#   4. asv publish, made offline (asv_benchmarks/asvtool.py offline), served on 127.0.0.1
#   5. headless Chromium, every host but 127.0.0.1 unresolvable: a graph page's
#      DOM and screenshot must show asv's plot with data (asvtool.py check-page)
# Usage: CB3_PYTHON=<python with cb3 installed> [CB3_TEST_DIR=.test] bash scripts/asv-check.sh
# Writes only under $CB3_TEST_DIR/asv (and ~/.cache/pip); root installs the
# Debian packages it needs (chromium and the web libraries asv's pages load).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
WORK="${CB3_TEST_DIR:-$ROOT/.test}"
PY="${CB3_PYTHON:-$WORK/venv/bin/python}"
OUT="$WORK/asv"
ASV_VERSION=0.6.6
GRAPH=bench_aead.AEAD.time_encrypt   # the graph page that is checked
STARTED=$SECONDS
lap() { printf '    [asv-check] %-40s %3d s\n' "$1" $((SECONDS - STARTED)); }

# Debian packages: the browser, and local copies of what asv's index.html
# takes from CDNs (asv_benchmarks/asvtool.py, VENDOR, says which file is whose).
NEED=()
command -v chromium >/dev/null || NEED+=(chromium)
[[ -f /usr/share/javascript/jquery/jquery.min.js ]] || NEED+=(libjs-jquery)
[[ -f /usr/share/haskell-js-flot/jquery.flot.min.js ]] || NEED+=(libghc-js-flot-data)
[[ -f /usr/share/javascript/bootstrap/js/bootstrap.min.js ]] || NEED+=(libjs-bootstrap)
[[ -f /usr/share/javascript/jquery-stupidtable/stupidtable.min.js ]] || NEED+=(libjs-jquery-stupidtable)
[[ -f /usr/share/javascript/blueimp-md5/md5.min.js ]] || NEED+=(node-blueimp-md5)
install_debian_packages asv-check "${NEED[@]}"
"$PY" -m pip install --quiet --disable-pip-version-check "asv==$ASV_VERSION"
lap "installs"

rm -rf "$OUT"
mkdir -p "$OUT/home"
# A config whose env, results and html are all under $OUT, and the committed
# baseline copied in: publish then shows its history plus this run.
CONF="$("$PY" asv_benchmarks/asvtool.py config "$OUT")"
cp -r asv_benchmarks/results "$OUT/results"
# asv keeps its machine file in ~: a private HOME keeps the user's alone.
asv() { HOME="$OUT/home" "$PY" -m asv --config "$CONF" "$@"; }
HOME="$OUT/home" "$PY" asv_benchmarks/asvtool.py machine cb3-check >/dev/null

asv check --python=same
lap "asv check"
(cd "$OUT" && "$PY" "$ROOT/asv_benchmarks/asvtool.py" smoke --max-size 65536)
lap "smoke (every benchmark, <= 64 KiB)"
# One call per benchmark (--quick), recorded for HEAD: a smoke run, not figures.
asv run --python=same --quick --machine cb3-check --set-commit-hash "$(git rev-parse HEAD)" \
    -b '^bench_(aead\.AEAD|hash\.Hash)\.[a-z_0-9]+\(64\)$' -b '^bench_machine\.MachineCounts' >"$OUT/run.log" 2>&1 || {
    cat "$OUT/run.log"; echo "asv-check: asv run failed" >&2; exit 1; }
grep -q "failed" "$OUT/run.log" && { cat "$OUT/run.log"; echo "asv-check: a benchmark failed" >&2; exit 1; }
lap "asv run --quick (slice)"
asv publish >"$OUT/publish.log" 2>&1 || { cat "$OUT/publish.log"; exit 1; }
"$PY" asv_benchmarks/asvtool.py offline "$OUT/html"
lap "asv publish + offline patch"

# Serve the site on loopback (asv's pages fetch their JSON, which file:// blocks).
PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PY" -m http.server --bind 127.0.0.1 --directory "$OUT/html" "$PORT" >"$OUT/http.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/index.json')" 2>/dev/null && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/index.html#$GRAPH?x-axis-scale=even&y-axis-scale=log"
# No network for the browser: every host name but 127.0.0.1 fails to resolve,
# so a page that still wanted a CDN would fall to asv's error page.
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars
        --user-data-dir="$OUT/chromium" --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
        --window-size=1280,900 --virtual-time-budget=15000)
"${CHROME[@]}" --dump-dom "$URL" >"$OUT/graph.dom.html" 2>"$OUT/chromium.log"
"${CHROME[@]}" --screenshot="$OUT/graph.png" "$URL" >>"$OUT/chromium.log" 2>&1
kill "$SERVER" 2>/dev/null || true
trap - EXIT
"$PY" asv_benchmarks/asvtool.py check-page "$OUT/graph.dom.html" "$OUT/graph.png" "$GRAPH"
lap "headless chromium: DOM + screenshot"
if grep -q '"GET /vendor/' "$OUT/http.log"; then :; else
    echo "asv-check: the page loaded nothing from vendor/ (served log: $OUT/http.log)" >&2; exit 1
fi
echo "asv-check: passed in $((SECONDS - STARTED)) s; screenshot $OUT/graph.png"
