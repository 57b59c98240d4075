"""The compile-time switches of cext that this interpreter's build does not
use, compiled and tested: each switch's other value is PyPy's default (or a
measuring build, docs/pypy.md), so on CPython this is the way to check those
routes with CPython's tools.

- CB3_TYPE_FIXES_ON=1 (compat.h; PyPy's default): __setattr__, __delattr__,
  __init_subclass__, __reduce_ex__ and __reduce__ that restore CPython's
  behaviour on PyPy. Here they must give exactly what CPython gives without
  them (the default build in this process).
- CB3_OUTPUT_VIA_HPY=1 (compat.h; PyPy's default): output bytes filled in C
  memory and copied by HPyBytes_FromStringAndSize.
- CB3_BYTES_VIA_HPY=0 (buffers.c; a measuring build): bytes arguments read
  through the buffer protocol like any other buffer.
- CB3_OUTPUT_BYTEARRAY_MIN=512 (compat.h; PyPy 8.0's route, from 1024 bytes
  there): outputs of 512 bytes and more made as private bytearrays, which
  the Python forwarders turn into bytes.

The variant is built from this source tree (setup.py build, linking the
installed package's libcb3.a: no cargo run) into a temporary directory, and
the tests that exercise these routes run against it in a subprocess.
"""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import cb3

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,  # one extension build (about 30 s)
    pytest.mark.skipif(
        platform.python_implementation() != "CPython",
        reason="PyPy's build already uses the other value of the first two switches, and CB3_TYPE_FIXES_ON=0 "
        "would let PyPy abort the process on a read-only attribute assignment (docs/pypy.md)",
    ),
]

VARIANT = {"CB3_TYPE_FIXES_ON": 1, "CB3_OUTPUT_VIA_HPY": 1, "CB3_BYTES_VIA_HPY": 0, "CB3_OUTPUT_BYTEARRAY_MIN": 512}

# What the switches change: every output (vectors, every API form, the smoke
# set), every bytes input and its errors (the bad-input matrix), the output
# blocks the HPy route malloc's and the views bytes take here (the leak
# tests: a block not freed or a view not released grows RSS), and the
# objects' attribute, subclass, pickle and copy behaviour.
TESTS = [
    "tests/packaging/test_smoke_pypy.py",
    "tests/api/test_vectors.py",
    "tests/api/test_bad_inputs.py",
    "tests/api/test_aead.py",
    "tests/properties/test_leaks.py",
    "tests/api/test_hash.py::test_not_subclassable_nor_picklable",
    "tests/api/test_stream.py::test_message_index_read_only",
    "tests/api/test_chacha.py::test_argument_errors",
    "tests/api/test_api_surface.py",
]

# Each line: an operation on each type and what it raised (type and message).
OBJECT_BEHAVIOUR = r"""
import copy, pickle
import cb3
from cb3.chacha20 import ChaCha20

objects = {
    "ChaCha20Blake3": (cb3.ChaCha20Blake3(bytes(32)), None),
    "Stream": (cb3.Stream(bytes(32), bytes(24)), "message_index"),
    "blake3": (cb3.blake3(), None),
    "ChaCha20": (ChaCha20(bytes(32), bytes(12)), "position"),
}
for name, (obj, prop) in objects.items():
    attempts = {
        "set a new attribute": lambda: setattr(obj, "anything", 1),
        "delete a missing attribute": lambda: delattr(obj, "anything"),
        "set a method": lambda: setattr(obj, "copy", 1),
        "set __class__": lambda: setattr(obj, "__class__", int),
        "subclass": lambda: type("Sub", (type(obj),), {}),
        "pickle": lambda: pickle.dumps(obj),
        "copy": lambda: copy.copy(obj),
        "deepcopy": lambda: copy.deepcopy(obj),
        "__reduce__": lambda: obj.__reduce__(),
        "has __dict__": lambda: obj.__dict__,
    }
    if prop:
        attempts["set the property"] = lambda: setattr(obj, prop, 5)
        attempts["delete the property"] = lambda: delattr(obj, prop)
    for label, attempt in attempts.items():
        try:
            attempt()
            outcome = "allowed"
        except Exception as error:
            outcome = f"{type(error).__name__}: {error}"
        print(f"{name}: {label}: {outcome}")
"""


def run_python(*args: str, pythonpath: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # -P: not the source tree's cb3 (it has no binary), only the variant or the installed one.
    return subprocess.run([sys.executable, "-P", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The variant's build directory: a complete cb3 package."""
    work = tmp_path_factory.mktemp("variant")
    env = dict(os.environ)
    env["CFLAGS"] = " ".join(f"-D{name}={value}" for name, value in VARIANT.items())
    env["CB3_STATICLIB"] = str(Path(cb3.get_library_dir()) / "libcb3.a")
    command = [sys.executable, "setup.py", "build", "--build-base", str(work / "base"),
               "--build-lib", str(work / "lib"), "--build-temp", str(work / "temp")]
    build = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-10000:]
    for name, value in VARIANT.items():
        assert f"-D{name}={value}" in build.stdout + build.stderr, f"{name} did not reach the compiler"
    return str(work / "lib")


def test_variant_is_what_runs(variant: str) -> None:
    check = run_python("-c", "import cb3; print(cb3._cb3.__file__); print(sorted(vars(cb3.blake3))); "
                             "print(cb3._cb3.OUTPUT_BYTEARRAY_MIN, type(cb3.hash(bytes(10), 600)).__name__)",
                       pythonpath=variant)
    assert check.returncode == 0, check.stderr
    loaded, members, results = check.stdout.splitlines()
    assert loaded.startswith(variant)
    assert results == "512 bytes"  # CB3_OUTPUT_BYTEARRAY_MIN took effect, and the forwarders
    for fix in ("__setattr__", "__delattr__", "__init_subclass__", "__reduce_ex__", "__reduce__"):
        assert repr(fix) in members, fix  # CB3_TYPE_FIXES_ON=1 took effect


def test_type_fixes_behave_like_cpython(variant: str) -> None:
    native = run_python("-c", OBJECT_BEHAVIOUR)
    fixed = run_python("-c", OBJECT_BEHAVIOUR, pythonpath=variant)
    assert native.returncode == 0 and fixed.returncode == 0, native.stderr + fixed.stderr
    assert len(native.stdout.splitlines()) == 4 * 10 + 2 * 2
    assert "allowed" not in native.stdout.replace("has __dict__: allowed", "")
    assert fixed.stdout.splitlines() == native.stdout.splitlines()


def test_variant_passes_the_tests(variant: str) -> None:
    result = run_python("-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider", pythonpath=variant)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
    assert " passed" in summary and "failed" not in summary, summary
