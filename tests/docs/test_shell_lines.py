"""The shell lines of README.md and the guides (docs/guides/*.md,
docs/c-api.md) run as a user types them: each page's shell blocks (indented
code blocks and ```sh fences) one after the other in one bash session, in a
fresh directory holding only `.venv/bin/python` (the venv the install line
makes, here the interpreter under test), with no `python` on PATH (Debian
has none, and the venv is not activated) and `set -e -o pipefail`.

A block may be preceded (its previous non-blank line) by a comment:

    <!-- not run: REASON -->            (README.md; `% not run: REASON` in MyST pages)
    <!-- shell setup: COMMANDS -->      (`% shell setup: COMMANDS`)

`not run` leaves the block out; `shell setup` runs COMMANDS first, for
what the reader brings (a file to encrypt) and the page does not show."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md")), ROOT / "docs" / "c-api.md"]
SHELL_FENCES = ("sh", "bash", "console", "shell")
MARKER = re.compile(r"^(?:<!--\s*|%\s*)(not run|shell setup):\s*(.*?)(?:\s*-->)?\s*$")
NO_PYTHON = '#!/bin/sh\necho "python: command not found (name the venv\'s interpreter: .venv/bin/python)" >&2\nexit 127\n'


@dataclass
class Block:
    line: int  # 1-based, the block's first line
    code: str
    skip: str | None
    setup: str | None


def _marker(lines: list[str], before: int) -> tuple[str | None, str | None]:
    i = before - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    match = MARKER.match(lines[i].strip()) if i >= 0 else None
    if match is None:
        return None, None
    return (match.group(2), None) if match.group(1) == "not run" else (None, match.group(2))


def shell_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i, fence = [], 0, None
    while i < len(lines):
        line = lines[i]
        opening = re.match(r"^(`{3,})\s*(\{?[\w-]*\}?)", line)
        if fence is None and opening:
            fence, language, start = opening.group(1), opening.group(2), i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith(fence):
                body.append(lines[i])
                i += 1
            if language in SHELL_FENCES:
                blocks.append(Block(start + 2, "\n".join(body) + "\n", *_marker(lines, start)))
            fence = None
            i += 1
            continue
        if line.startswith("    ") and line.strip() and (i == 0 or not lines[i - 1].strip()):
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            blocks.append(Block(start + 1, "\n".join(body).rstrip() + "\n", *_marker(lines, start)))
            continue
        i += 1
    return blocks


RUN = [(path, [b for b in shell_blocks(path) if b.skip is None]) for path in PAGES]
RUN = [(path, blocks) for path, blocks in RUN if blocks]


def test_the_pages_shell_blocks_are_found():
    readme = shell_blocks(ROOT / "README.md")
    assert [b.skip is None for b in readme] == [False, False, True, False]  # install, test command, prompts: not run
    quickstart = readme[2]
    assert quickstart.setup and "keygen" in quickstart.code
    decrypt = next(line for line in quickstart.code.splitlines() if " decrypt " in line)
    assert "-o notes.txt " not in decrypt  # the original, which decrypt refuses to overwrite
    files = [b for b in shell_blocks(ROOT / "docs" / "guides" / "files.md") if b.skip is None]
    assert len(files) >= 3 and any("--key-env" in b.code for b in files)
    assert len(RUN) >= 3


def test_shell_blocks_name_the_venvs_interpreter():
    """No activation assumed: every runnable line calls .venv/bin/python."""
    for path, blocks in RUN:
        for block in blocks:
            bare = re.findall(r"(?<![\w/.])python3?(?= )", block.code)
            assert not bare, f"{path.name}:{block.line}: a bare `python` (name .venv/bin/python): {block.code}"


@pytest.mark.parametrize("page", [path for path, _ in RUN], ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_lines_run_in_order_from_a_fresh_directory(page, tmp_path):
    blocks = dict(RUN)[page]
    script = ["set -e -o pipefail"]
    for block in blocks:
        script.append(f"# {page.name}:{block.line}")
        if block.setup:
            script.append(block.setup)
        script.append(block.code)
    text = "\n".join(script)
    for tool in ("cc", "pkg-config", "tar"):
        if re.search(rf"(^|[\s|$(]){tool}\s", text, flags=re.M) and shutil.which(tool) is None:
            pytest.skip(f"{page.name}'s shell lines use {tool}, which is not installed")
    work = tmp_path / "work"
    bin_dir, venv_bin = tmp_path / "no-python", work / ".venv" / "bin"
    for directory in (bin_dir, venv_bin):
        directory.mkdir(parents=True)
    # The venv the README's install line makes: here the interpreter under test.
    (venv_bin / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    for name in ("python", "python3"):
        (bin_dir / name).write_text(NO_PYTHON)
    for path in (venv_bin / "python", bin_dir / "python", bin_dir / "python3"):
        path.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "CB3_KEY")}
    env["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
    result = subprocess.run(["bash", "-x", "-c", text], cwd=work, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"{page.name}'s shell lines failed:\n{result.stderr[-4000:]}"
    if page.name == "README.md":
        assert (work / "notes.decrypted.txt").read_bytes() == (work / "notes.txt").read_bytes() == b"meet at noon\n"
        assert (work / "key.hex").stat().st_mode & 0o777 == 0o600
