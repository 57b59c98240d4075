"""cb3 on every supported interpreter: the HPy 3.13+ type-flag patch
(third_party/hpy/PATCHES.md) and the declared support range."""

import ast
import os
import platform
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import cb3
import cb3._cb3 as ext

ROOT = Path(__file__).resolve().parents[1]
INLINE_VALUES = 1 << 2  # Py_TPFLAGS_INLINE_VALUES on 3.13+; HPy 0.9's type marker before


def hpy_types():
    types = [v for v in vars(ext).values() if isinstance(v, type) and not issubclass(v, BaseException)]
    assert len(types) >= 4, types  # ChaCha20, ChaCha20Blake3, Stream, blake3 at least
    return types


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="tp_flags bits are CPython's")
def test_hpy_types_do_not_claim_inline_values():
    flagged = [t.__name__ for t in hpy_types() if t.__flags__ & INLINE_VALUES]
    if sys.version_info >= (3, 13):
        # Stock hpy 0.9 sets bit 2 on every HPy type: 3.13+ then reads the NULL
        # ht_cached_keys of these types on the second run of a call site.
        assert flagged == []
    elif cb3.HPY_ABI == "cpython":
        # Before 3.13 the patched runtime keeps upstream's marker: this checks
        # that hpy_types() sees the types HPyType_FromSpec made.
        assert sorted(flagged) == sorted(t.__name__ for t in hpy_types())


def test_specialized_call_sites_do_not_crash():
    # Each call site runs many times, so CPython 3.13+ specializes its method
    # and attribute lookups (the path that crashed); run in a child so that
    # a crash is reported as a failure with its signal, not a dead pytest.
    code = """
import cb3, cb3._cb3 as ext
key, nonce = bytes(range(32)), bytes(24)
aead = cb3.ChaCha20Blake3(key)
stream = cb3.Stream(key, nonce)
h = cb3.blake3()
for i in range(3000):
    message = bytes([i % 256]) * (i % 97)
    assert aead.decrypt(nonce, aead.encrypt(nonce, message)) == message
    h.update(message)
    _ = aead.TAG_SIZE, h.digest_size, h.name
    stream.encrypt(message)
    ext.ChaCha20(key, bytes(12)).update(message)
print(h.hexdigest()[:16], stream.message_index)
"""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, cwd="/")
    assert result.returncode == 0, f"exit status {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.split()[1] == "3000"


def test_declared_support_matches_this_interpreter_and_each_other():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", project["requires-python"]).groups()
    minors = range(int(low), int(high))
    versions = sorted(
        c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert versions == sorted(f"3.{m}" for m in minors)
    pypys = re.search(r"^SUPPORTED_PYPY = (\{.*\})$", (ROOT / "setup.py").read_text(encoding="utf-8"), re.MULTILINE)
    supported_pypy = ast.literal_eval(pypys[1])
    assert supported_pypy and all(f"{v[0]}.{v[1]}" in versions for v in supported_pypy.values())
    if platform.python_implementation() == "PyPy":
        assert supported_pypy[sys.pypy_version_info[:2]] == sys.version_info[:2]  # type: ignore[attr-defined]
    else:
        assert sys.version_info[:2] in [(3, m) for m in minors]
