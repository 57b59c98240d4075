"""third_party/hpy/ is the pinned hpy 0.9.0 sdist plus exactly the patches that
PATCHES.md lists (scripts/hpy_vendor.py), and that check can fail.

The sdist is CB3_HPY_SDIST if set (the check verifies its hash), else pip
downloads the pin once per session. Needs the checkout's scripts/
(scripts/source-only-tests.txt)."""

from __future__ import annotations

import difflib
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Imported only in a checkout: the wheel runs test an unpacked sdist, whose scripts/ holds
# only the wheel-contents check, and deselect this file (scripts/source-only-tests.txt)
# after collecting it. Elsewhere every test here fails on the missing names rather than
# pass or skip.
if (ROOT / "scripts" / "hpy_vendor.py").is_file():
    sys.path.insert(0, str(ROOT / "scripts"))
    import hpy_vendor

    from harness.core import HPY_SDIST


@pytest.fixture(scope="session")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("CB3_HPY_SDIST")
    if given:
        return Path(given)
    return hpy_vendor.download_sdist(tmp_path_factory.mktemp("hpy-sdist"))


@pytest.fixture
def vendor_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "hpy"
    shutil.copytree(hpy_vendor.VENDOR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def run_check(sdist: Path, vendor: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", str(ROOT / "scripts/hpy_vendor.py"), "check", "--sdist", str(sdist),
                           "--vendor", str(vendor)], capture_output=True, text=True)


# ---- (a) the vendored tree is upstream + the listed patches --------------------------
def test_vendored_tree_is_upstream_plus_listed_patches(sdist: Path) -> None:
    result = run_check(sdist, hpy_vendor.VENDOR)
    assert result.returncode == 0, result.stderr
    assert "identical" in result.stdout
    # Every upstream hpy/devel/ file is there; the one patch changes the file it names.
    upstream = hpy_vendor.upstream_files(sdist)
    vendored = hpy_vendor.vendored_tree()
    assert upstream.keys() == vendored.keys()
    assert len([k for k in vendored if k.startswith("devel/src/runtime/")]) >= 19
    changed = sorted(k for k in upstream if upstream[k] != vendored[k])
    assert changed == sorted({f for e in hpy_vendor.listed_patches() for f in e.files})


def test_patched_devel_is_what_setup_py_compiles(sdist: Path, tmp_path: Path) -> None:
    # What the harness builds hpy.universal from: the vendored devel/ files.
    tree = hpy_vendor.patched_devel(sdist)
    assert "src/runtime/ctx_type.c" in tree and "__init__.py" in tree
    hpy_vendor.write_patched_devel(sdist, tmp_path)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(tree)
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (hpy_vendor.VENDOR / "devel" / rel).read_bytes(), rel


def test_sdist_with_another_hash_is_refused(sdist: Path, tmp_path: Path) -> None:
    other = tmp_path / sdist.name
    other.write_bytes(sdist.read_bytes() + b"\0")
    result = run_check(other, hpy_vendor.VENDOR)
    assert result.returncode != 0
    assert "sha256" in result.stderr and hpy_vendor.pin()[2] in result.stderr


# ---- (b) PATCHES.md lists exactly the patch files, each with its fields -------------------
def test_patches_md_lists_every_patch_with_its_fields() -> None:
    entries = hpy_vendor.listed_patches()
    on_disk = sorted(p.relative_to(hpy_vendor.VENDOR).as_posix() for p in (hpy_vendor.VENDOR / "patches").iterdir())
    assert [e.patch for e in entries] == on_disk
    assert len(entries) >= 1
    for e in entries:
        for field in hpy_vendor.FIELDS:
            assert e.fields.get(field, "").strip(), (e.number, field)
        assert re.search(r"\b(CPython|PyPy) \d+\.\d+\b", e.fields["Interpreters"]), e.fields["Interpreters"]
        assert re.search(r"tests/test_\w+\.py", e.fields["Test"]), e.fields["Test"]
    assert hpy_vendor.patch_list_problems() == []


def test_patches_md_provenance_is_the_pin() -> None:
    # The sha256 PATCHES.md documents is the one the harness and the check use.
    text = (hpy_vendor.VENDOR / "PATCHES.md").read_text()
    provenance = text.split("## Provenance\n", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"sha256 `([0-9a-f]{64})`", provenance) == [HPY_SDIST.rsplit(":", 1)[1]]
    assert f"`{hpy_vendor.sdist_name()}.tar.gz`" in provenance


def test_patch_list_problems_are_found(vendor_copy: Path) -> None:
    md = vendor_copy / "PATCHES.md"
    original = md.read_text()
    first = next((vendor_copy / "patches").glob("0001-*"))
    (vendor_copy / "patches/0002-unlisted.patch").write_bytes(first.read_bytes())
    md.write_text(re.sub(r"\n- \*\*Test:\*\*.*?(?=\n\n)", "", original, count=1, flags=re.S))
    problems = hpy_vendor.patch_list_problems(vendor_copy)
    assert "patches/0002-unlisted.patch is not listed in PATCHES.md" in problems
    assert "PATCHES.md, Patch 1: no **Test:** line" in problems
    md.write_text(original.replace("**Files:** `devel/src/runtime/ctx_type.c`", "**Files:** `devel/src/runtime/ctx_long.c`"))
    problems = hpy_vendor.patch_list_problems(vendor_copy)
    assert any("**Files:** says ['devel/src/runtime/ctx_long.c']" in p for p in problems), problems


# ---- (c) the check fails on an altered copy ------------------------------------------
ALTERATIONS = ["changed byte", "extra file", "missing file", "unlisted patch", "patch dropped"]


@pytest.mark.parametrize("alteration", ALTERATIONS)
def test_check_fails_on_an_altered_copy(sdist: Path, vendor_copy: Path, alteration: str) -> None:
    assert run_check(sdist, vendor_copy).returncode == 0  # the copy itself passes
    if alteration == "changed byte":
        path = vendor_copy / "devel/include/hpy/hpytype.h"
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x20
        path.write_bytes(bytes(data))
        expected = "differs: devel/include/hpy/hpytype.h"
    elif alteration == "extra file":
        (vendor_copy / "devel/src/runtime/ctx_extra.c").write_text("/* not upstream */\n")
        expected = "not upstream (nor created by a patch): devel/src/runtime/ctx_extra.c"
    elif alteration == "missing file":
        (vendor_copy / "devel/abitag.py").unlink()
        expected = f"missing from {vendor_copy}: devel/abitag.py"
    elif alteration == "unlisted patch":
        (vendor_copy / "patches/0099-more.patch").write_text("")
        expected = "patches/0099-more.patch is not listed in PATCHES.md"
    else:  # the vendored files stay patched, PATCHES.md no longer lists the last patch
        last = hpy_vendor.listed_patches()[-1]
        md = vendor_copy / "PATCHES.md"
        md.write_text(md.read_text().replace(f"### Patch {last.number}:", "### Not a patch:"))
        (vendor_copy / last.patch).unlink()
        expected = f"differs: {last.files[0]}"
    result = run_check(sdist, vendor_copy)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert expected in result.stderr


def test_check_fails_when_a_patch_does_not_apply(sdist: Path, vendor_copy: Path) -> None:
    patch = vendor_copy / "patches/0001-ctx-type-no-tpflags-bit-2.patch"
    patch.write_text(patch.read_text().replace(" #define HPy_TYPE_MAGIC 0xba5f", " #define HPy_TYPE_MAGIC 0xba5e"))
    result = run_check(sdist, vendor_copy)
    assert result.returncode != 0
    assert "src/runtime/ctx_type.c: hunk at line 22 does not match" in result.stderr


# ---- the patch applier (no `patch` program) -----------------------------------------------
def test_apply_patch_round_trips_difflib_diffs(sdist: Path) -> None:
    base = hpy_vendor.upstream_files(sdist)["devel/src/runtime/ctx_bytes.c"]
    lines = base.decode().splitlines(keepends=True)
    variants = {
        "insert at the start": ["/* new */\n"] + lines,
        "append at the end": lines + ["/* new */\n"],
        "delete the first line": lines[1:],
        "change and delete in the middle": lines[:5] + ["changed\n"] + lines[8:],
        "empty": [],
    }
    variants["insert in the middle"] = lines[:6] + ["/* new */\n"] + lines[6:]
    for (name, new), context in itertools.product(variants.items(), (3, 0)):  # 0: pure inserts say -N,0
        diff = "".join(difflib.unified_diff(lines, new, "a/f.c", "b/f.c", n=context)).encode()
        files = {"devel/f.c": base}
        hpy_vendor.apply_patch(files, b"described first\n\n" + diff)
        assert files["devel/f.c"] == "".join(new).encode(), (name, context)
    # GNU diff's marker for a last line without a newline (difflib writes none).
    files = {"devel/f.c": b"a\nb"}
    hpy_vendor.apply_patch(files, b"--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
                                  b"+c\n\\ No newline at end of file\n")
    assert files == {"devel/f.c": b"a\nc"}
    # A hunk that does not match is refused, not applied elsewhere.
    diff = "".join(difflib.unified_diff(lines, lines[1:], "a/f.c", "b/f.c")).encode()
    files = {"devel/f.c": b"other\n" + base}
    with pytest.raises(hpy_vendor.VendorError, match="does not match"):
        hpy_vendor.apply_patch(files, diff)
