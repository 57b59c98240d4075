"""The built extension is hardened as distributions build C (setup.py):
stack protector, _FORTIFY_SOURCE, full RELRO, no executable stack. Read from
the installed binary with binutils' readelf. (The Rust core is compiled by
rustc, which has no stable stack-protector option; its memory safety comes
from the language.)"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import cb3
import cb3._cb3

READELF = shutil.which("readelf")
pytestmark = pytest.mark.skipif(READELF is None, reason="needs binutils' readelf (apt-get install binutils)")


def binary() -> Path:
    path = Path(getattr(cb3._cb3, "__file__", ""))
    if path.suffix == ".so" and path.is_file():
        return path
    # PyPy (hybrid ABI): the module loaded by hpy's loader names no file.
    candidates = sorted(Path(cb3.__file__).parent.glob("_cb3*.so"))
    assert candidates, f"no _cb3*.so in {Path(cb3.__file__).parent}"
    return candidates[0]


def readelf(*flags: str) -> str:
    assert READELF is not None
    return subprocess.run([READELF, "-W", *flags, str(binary())], capture_output=True, text=True, check=True).stdout


def test_full_relro() -> None:
    """GNU_RELRO plus BIND_NOW: the GOT is read-only after loading."""
    assert re.search(r"^\s*GNU_RELRO\s", readelf("--program-headers"), flags=re.MULTILINE)
    dynamic = readelf("--dynamic")
    assert re.search(r"\(BIND_NOW\)|\(FLAGS\)\s.*\bBIND_NOW\b|\(FLAGS_1\)\s.*\bNOW\b", dynamic), dynamic


def test_no_executable_stack() -> None:
    stack = re.search(r"^\s*GNU_STACK\s.*$", readelf("--program-headers"), flags=re.MULTILINE)
    assert stack is not None and not stack.group(0).rstrip().endswith("E"), stack


def test_stack_protector_and_fortify() -> None:
    """-fstack-protector-strong makes functions with arrays call
    __stack_chk_fail on a smashed canary; _FORTIFY_SOURCE turns libc calls
    with known sizes into their checked __*_chk forms."""
    symbols = readelf("--dyn-syms")
    assert re.search(r"\b__stack_chk_fail\b", symbols), "no stack protector"
    assert re.findall(r"\b__\w+_chk\b", symbols), "no _FORTIFY_SOURCE checked calls (__memcpy_chk, ...)"
