"""Every ```python block of README.md and of the documentation's Markdown
pages (docs/**/*.md) runs, on its own, in a fresh temporary directory, as the
module __main__ (so `if __name__ == "__main__":` blocks run and process pools
can pickle the functions a block defines). The documentation build runs the
same blocks again through Sphinx's doctest builder (docs/_ext/cb3_pyblocks.py);
this test runs them on every interpreter the suite runs on.

A block preceded by a `% not run: REASON` comment is a fragment and is left
out here as there."""

from __future__ import annotations

import re
import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<skip>% not run:[^\n]*\n)?(?P<indent>[ ]*)```python\n(?P<code>.*?)^(?P=indent)```$", re.M | re.S)


def blocks(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start("code")) + 1, textwrap.dedent(m.group("code")))
        for m in FENCE.finditer(text)
        if not m.group("skip")
    ]


BLOCKS = [(path, line, code) for path in PAGES for line, code in blocks(path)]


def test_readme_is_short_and_has_the_set_up_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    # The two set-up commands, exactly.
    assert "\n    python3 -m venv .venv && .venv/bin/python -m pip install . && .venv/bin/python -P -m cb3\n" in text
    assert "\n    bash scripts/test.sh\n" in text
    assert len(blocks(README)) >= 2


def test_recipes_page_has_the_recipes():
    text = (ROOT / "docs" / "guides" / "recipes.md").read_text(encoding="utf-8")
    for heading in (
        "## Store the nonce with the ciphertext, and parse it back",
        "## Large data: encrypt a file through mmap",
        "## Threads, processes and asyncio",
        "## Interoperate with the Rust crate and the Ruby gem",
        "## Keys: do's and don'ts",
    ):
        assert heading in text
    assert len(BLOCKS) >= 12


# Blocks that call cb3 from several Python threads carry the `threads` marker
# (pyproject.toml: HPy's debug mode cannot run them).
PARAMS = [
    pytest.param(
        code,
        id=f"{path.relative_to(ROOT)}:{line}",
        marks=[pytest.mark.threads] if "Thread" in code or "to_thread" in code else [],
    )
    for path, line, code in BLOCKS
]


@pytest.mark.parametrize("code", PARAMS)
def test_doc_block(code, request, tmp_path, monkeypatch):
    name = request.node.callspec.id
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("__main__")
    module.__file__ = str(tmp_path / "block.py")
    # A real file: process pools that start workers by spawn or forkserver
    # (the default from CPython 3.14) import the main module from it.
    (tmp_path / "block.py").write_text(code, encoding="utf-8")
    monkeypatch.setitem(sys.modules, "__main__", module)
    exec(compile(code, name, "exec"), module.__dict__)
