"""third_party/hpy/ is upstream hpy 0.9.0 plus exactly the patches that
third_party/hpy/PATCHES.md lists (scripts/hpy_vendor.py). Needs the
hash-pinned upstream sdist: CB3_HPY_SDIST (scripts/test.sh sets it for the
primary interpreter's run)."""

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "hpy_vendor.py"
SDIST = os.environ.get("CB3_HPY_SDIST")

pytestmark = pytest.mark.skipif(
    not SDIST or not SCRIPT.is_file(),
    reason="needs CB3_HPY_SDIST (hpy-0.9.0.tar.gz) and a checkout's scripts/ (scripts/test.sh sets it)",
)


@pytest.fixture
def vendor(tmp_path, monkeypatch):
    """scripts/hpy_vendor.py working on a copy of third_party/hpy/."""
    spec = importlib.util.spec_from_file_location("hpy_vendor", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    copy = tmp_path / "hpy"
    shutil.copytree(ROOT / "third_party" / "hpy", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(module, "VENDORED", copy)
    monkeypatch.setattr(module, "PATCHES", copy / "patches")
    return module, copy


def test_vendored_tree_is_upstream_plus_the_listed_patches(vendor):
    module, _ = vendor
    assert module.problems(Path(SDIST)) == []
    assert module.listed_patches()  # the 3.13+ type-flag patch at least


def test_an_unlisted_change_is_found(vendor):
    module, copy = vendor
    helpers = copy / "devel" / "src" / "runtime" / "helpers.c"
    helpers.write_text(helpers.read_text(encoding="utf-8") + "/* stray */\n", encoding="utf-8")
    assert module.problems(Path(SDIST)) == [
        "devel/src/runtime/helpers.c differs from upstream, and patches/src__runtime__helpers.c.patch does not exist"
    ]


def test_a_patch_that_no_longer_matches_is_found(vendor):
    module, copy = vendor
    ctx_type = copy / "devel" / "src" / "runtime" / "ctx_type.c"
    ctx_type.write_text(ctx_type.read_text(encoding="utf-8").replace("0x030D0000", "0x030E0000", 1), encoding="utf-8")
    assert module.problems(Path(SDIST)) == [
        "devel/src/runtime/ctx_type.c: the change differs from patches/src__runtime__ctx_type.c.patch"
    ]


def test_missing_and_extra_files_and_unlisted_patches_are_found(vendor):
    module, copy = vendor
    (copy / "devel" / "abitag.py").unlink()
    (copy / "devel" / "extra.h").write_text("", encoding="utf-8")
    listing = copy / "PATCHES.md"
    listing.write_text(listing.read_text(encoding="utf-8").replace("`patches/src__runtime__ctx_object.c.patch`", "x"),
                       encoding="utf-8")
    assert module.problems(Path(SDIST)) == [
        "devel/abitag.py: in upstream hpy 0.9.0, missing from the vendored tree",
        "devel/extra.h: not in upstream hpy 0.9.0",
        "patches/src__runtime__ctx_object.c.patch is not listed in PATCHES.md",
    ]
