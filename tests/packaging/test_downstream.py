"""examples/downstream, a C extension that uses cb3's C API, built in a
temporary directory against the installed cb3 (its header and static
library): its output equals cb3's Python API and cb3 decrypts it."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cb3

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "downstream"


@pytest.fixture(scope="module")
def downstream(tmp_path_factory):
    work = tmp_path_factory.mktemp("downstream")
    shutil.copytree(EXAMPLE, work, dirs_exist_ok=True)
    # Run from the copy, so `import cb3` in its setup.py finds the installed cb3.
    process = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "--build-temp", str(work / "build")],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    assert process.returncode == 0, process.stdout
    (built,) = work.glob("cb3_downstream*.so")
    spec = importlib.util.spec_from_file_location("cb3_downstream", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.__file__ = str(built)
    return module


def nonce_for(nonce: bytes, index: int) -> bytes:
    counter = (int.from_bytes(nonce[16:], "little") + index) % 2**64
    return nonce[:16] + counter.to_bytes(8, "little")


MESSAGES = [b"", b"a", b"x" * 511, b"y" * 512, os.urandom(4096), bytearray(os.urandom(70_001)), memoryview(b"view")]


@pytest.mark.parametrize("aad", [b"", b"header"])
def test_output_equals_the_python_api(downstream, aad):
    key, nonce = cb3.generate_key(), cb3.generate_nonce()
    kwargs = {"associated_data": aad} if aad else {}
    produced = downstream.encrypt_many(key, nonce, MESSAGES, **kwargs)
    assert isinstance(produced, list) and len(produced) == len(MESSAGES)

    stream = cb3.Stream(key, nonce)
    assert produced == [stream.encrypt(m, aad) for m in MESSAGES]
    cipher = cb3.ChaCha20Blake3(key)
    assert produced == [cipher.encrypt(nonce_for(nonce, i), m, aad) for i, m in enumerate(MESSAGES)]

    # cb3 decrypts it: message by message, and as a stream.
    for i, (ciphertext, message) in enumerate(zip(produced, MESSAGES)):
        assert cipher.decrypt(nonce_for(nonce, i), ciphertext, aad) == bytes(message)
    receiver = cb3.Stream(key, nonce)
    assert [receiver.decrypt(c, aad) for c in produced] == [bytes(m) for m in MESSAGES]
    with pytest.raises(cb3.DecryptionError):
        cipher.decrypt(nonce_for(nonce, 1), produced[0], aad)


def test_nonce_counter_wraps_like_the_stream(downstream):
    key = cb3.generate_key()
    nonce = os.urandom(16) + (2**64 - 2).to_bytes(8, "little")
    messages = [b"m%d" % i for i in range(5)]
    stream = cb3.Stream(key, nonce)
    assert downstream.encrypt_many(key, nonce, messages) == [stream.encrypt(m) for m in messages]


def test_errors_and_versions(downstream):
    nonce = cb3.generate_nonce()
    with pytest.raises(ValueError, match="key must be 32 bytes"):
        downstream.encrypt_many(b"short", nonce, [b"x"])
    with pytest.raises(ValueError, match="nonce must be 24 bytes"):
        downstream.encrypt_many(cb3.generate_key(), b"n" * 12, [b"x"])
    with pytest.raises(TypeError):
        downstream.encrypt_many(cb3.generate_key(), nonce, [b"ok", "not bytes"])
    with pytest.raises(TypeError):
        downstream.encrypt_many(cb3.generate_key(), nonce, 42)
    assert downstream.encrypt_many(cb3.generate_key(), nonce, []) == []
    # Compiled against the installed header, linked against its library.
    assert downstream.HEADER_VERSION == downstream.LIBRARY_VERSION == cb3.__version__


def test_module_exports_only_its_init(downstream):
    """-Wl,--exclude-libs,libcb3.a keeps cb3's symbols private to the module."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    symbols = subprocess.run(
        [nm, "-D", "--defined-only", downstream.__file__], capture_output=True, text=True, check=True
    )
    exported = [line.split()[-1] for line in symbols.stdout.splitlines() if " T " in line]
    assert exported == ["PyInit_cb3_downstream"]
