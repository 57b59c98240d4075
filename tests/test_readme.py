"""Every ```python block of README.md runs, on its own, in a fresh temporary
directory, as the module __main__ (so `if __name__ == "__main__":` blocks
run and process pools can pickle the functions a block defines)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = [
    (README.read_text(encoding="utf-8").count("\n", 0, m.start()) + 2, m.group(1))
    for m in re.finditer(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), re.M | re.S)
]


def test_readme_has_the_recipes():
    text = README.read_text(encoding="utf-8")
    for heading in (
        "### Store the nonce with the ciphertext, and parse it back",
        "### Large data: encrypt a file through mmap",
        "### Threads, processes and asyncio",
        "### Interoperate with the Rust crate and the Ruby gem",
        "### Keys: do's and don'ts",
    ):
        assert heading in text
    # The two set-up commands, exactly.
    assert "\n    python3 -m venv .venv && .venv/bin/python -m pip install . && .venv/bin/python -P -m cb3\n" in text
    assert "\n    bash scripts/test.sh\n" in text
    assert len(BLOCKS) >= 9


# Blocks that call cb3 from several Python threads carry the `threads` marker
# (pyproject.toml: HPy's debug mode cannot run them).
PARAMS = [
    pytest.param(line, code, id=f"README.md:{line}", marks=[pytest.mark.threads] if "Thread" in code or "to_thread" in code else [])
    for line, code in BLOCKS
]


@pytest.mark.parametrize("line, code", PARAMS)
def test_readme_block(line, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("__main__")
    module.__file__ = str(tmp_path / f"readme_{line}.py")
    # A real file: process pools that start workers by spawn or forkserver
    # (the default from CPython 3.14) import the main module from it.
    (tmp_path / f"readme_{line}.py").write_text(code, encoding="utf-8")
    monkeypatch.setitem(sys.modules, "__main__", module)
    exec(compile(code, f"README.md:{line}", "exec"), module.__dict__)
