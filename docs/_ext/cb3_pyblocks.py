"""Every ```python block of the site is a test of the doctest builder.

Each block runs on its own, as tests/docs/test_readme.py runs the README's: in a
fresh temporary directory, as the module ``__main__`` backed by a real file
(so ``if __name__ == "__main__":`` blocks run and process pools can pickle
the functions a block defines). The HTML shows the block unchanged.

Excerpts of a file (literalinclude) are that file's to test. A block that is a fragment (part of a file shown elsewhere) is preceded by
a MyST comment saying so and why, which this extension reads:

    % not run: a setup.py; examples/downstream builds one for real
"""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
import types
from pathlib import Path
from typing import Any

from docutils import nodes

NOT_RUN = "not run:"


def run_block(code: str, label: str) -> None:
    """Runs one block as ``__main__`` in a fresh temporary directory."""
    code = textwrap.dedent(code)
    old_cwd, old_main = os.getcwd(), sys.modules.get("__main__")
    with tempfile.TemporaryDirectory(prefix="cb3-doc-") as tmp:
        path = Path(tmp) / "block.py"
        path.write_text(code, encoding="utf-8")
        module = types.ModuleType("__main__")
        module.__file__ = str(path)
        os.chdir(tmp)
        sys.modules["__main__"] = module
        try:
            exec(compile(code, label, "exec"), module.__dict__)
        finally:
            os.chdir(old_cwd)
            if old_main is not None:
                sys.modules["__main__"] = old_main


def _skip_reason(node: nodes.literal_block) -> str | None:
    previous = node.previous_sibling()
    if isinstance(previous, nodes.comment) and previous.astext().strip().startswith(NOT_RUN):
        return previous.astext().strip()[len(NOT_RUN):].strip()
    return None


def mark_blocks(app: Any, doctree: nodes.document) -> None:
    docname = app.env.docname
    for number, node in enumerate(doctree.findall(nodes.literal_block)):
        if node.get("language") not in ("python", "python3", "py") or "testnodetype" in node:
            continue
        if str(node.get("source", "")).endswith(".py"):
            continue  # a literalinclude of a file: that file's own tests run it
        if _skip_reason(node) is not None:
            continue
        source = node.source or app.env.doc2path(docname)
        label = f"{Path(source).name}:{node.line or 0}"
        node["testnodetype"] = "testcode"
        node["groups"] = [f"{docname}-{number}"]
        node["options"] = {}
        node["test"] = f"run_block({node.astext()!r}, {label!r})"


def setup(app: Any) -> dict[str, Any]:
    app.connect("doctree-read", mark_blocks)
    app.config.doctest_global_setup = "from cb3_pyblocks import run_block"
    return {"parallel_read_safe": True, "parallel_write_safe": True}
