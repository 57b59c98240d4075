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

ROOT = Path(__file__).resolve().parents[2]
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


def setup_supported_pypy() -> dict[tuple[int, int], tuple[tuple[int, int], str]]:
    """setup.py's SUPPORTED_PYPY literal."""
    pypys = re.search(r"^SUPPORTED_PYPY = (\{.*\})$", (ROOT / "setup.py").read_text(encoding="utf-8"), re.MULTILINE)
    assert pypys is not None
    return ast.literal_eval(pypys[1])  # type: ignore[no-any-return]


def test_declared_support_matches_this_interpreter_and_each_other():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", project["requires-python"]).groups()
    minors = range(int(low), int(high))
    versions = sorted(
        c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert versions == sorted(f"3.{m}" for m in minors)
    supported_pypy = setup_supported_pypy()
    assert supported_pypy and all(f"{v[0]}.{v[1]}" in versions for v, _ in supported_pypy.values())
    assert {abi for _, abi in supported_pypy.values()} <= {"hybrid", "cpython"}
    if platform.python_implementation() == "PyPy":
        python, abi = supported_pypy[sys.pypy_version_info[:2]]  # type: ignore[attr-defined]
        assert python == sys.version_info[:2]
        assert cb3._cb3.HPY_ABI == abi  # the build took the ABI setup.py names for this PyPy
    else:
        assert sys.version_info[:2] in [(3, m) for m in minors]


REFUSE = """
import platform, runpy, sys, sysconfig
{patch}
sys.argv = ["setup.py", "--version"]
try:
    runpy.run_path({setup!r}, run_name="__main__")
except SystemExit as e:
    print(e.code)
else:
    print("not refused")
"""


def refusal(patch: str) -> str:
    code = REFUSE.format(patch=patch, setup=str(ROOT / "setup.py"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def supported_pypy_list() -> list[str]:
    return [f"PyPy {p[0]}.{p[1]} (Python {v[0]}.{v[1]})" for p, (v, _) in setup_supported_pypy().items()]


def test_setup_refuses_a_pypy_release_no_test_covers():
    # The check runs before setuptools is imported (a PyPy may have none), so a fake
    # PyPy 9.0 is refused whatever runs this test.
    message = refusal('platform.python_implementation = lambda: "PyPy"\nsys.pypy_version_info = (9, 0, 0, "final", 0)')
    assert message.startswith("error: cb3 supports CPython 3.11 to 3.15 and ")
    assert f"this is PyPy 9.0.0 (Python {platform.python_version()})" in message
    assert all(p in message for p in supported_pypy_list()), message


def test_setup_refuses_a_free_threaded_build():
    message = refusal(
        'platform.python_implementation = lambda: "CPython"\n'
        "get = sysconfig.get_config_var\n"
        'sysconfig.get_config_var = lambda name: 1 if name == "Py_GIL_DISABLED" else get(name)'
    )
    assert "with the GIL; this is the free-threaded build of CPython" in message
    assert "docs/free-threading.md" in message
