"""cb3 decrypts what the Rust crate chacha20-blake3 encrypts, at the Python
level: examples/crate_encrypt.rs (built with cargo against the same
locked crate) seals messages of many lengths, cb3 opens them and produces the
same bytes. (rustlib/tests/abi.rs compares the C entry points with the crate.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import cb3

RUSTLIB = Path(__file__).resolve().parents[2] / "rustlib"
LENGTHS = [0, 1, 31, 32, 63, 64, 65, 511, 512, 513, 1023, 1024, 1025, 4096, 65_539, (1 << 20) + 7]
KEY = bytes(range(7, 39))
NONCE = bytes(range(200, 224))


def message(length: int) -> bytes:
    return bytes((7 * i + 3) % 251 for i in range(length))


@pytest.fixture(scope="module")
def crate_output() -> dict[tuple[bytes, int], bytes]:
    cargo = os.environ.get("CARGO") or shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not installed: the crate's ciphertext comes from a Rust program (install Rust)")
    # The same target directory as tests/c/run.sh (noxfile.py's chroot-pypy step caches it).
    target = os.environ.get("CB3_C_TARGET_DIR", str(RUSTLIB / "target"))
    outputs = {}
    for aad in (b"", b"associated data \x00\xff"):
        process = subprocess.run(
            [cargo, "run", "--quiet", "--locked", "--example", "crate_encrypt", "--target-dir", target, "--",
             KEY.hex(), NONCE.hex(), aad.hex(), *map(str, LENGTHS)],
            cwd=RUSTLIB, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert process.returncode == 0, process.stderr[-5000:]
        lines = process.stdout.splitlines()
        assert len(lines) == len(LENGTHS)
        outputs.update({(aad, n): bytes.fromhex(line) for n, line in zip(LENGTHS, lines)})
    return outputs


@pytest.mark.parametrize("aad", [b"", b"associated data \x00\xff"], ids=["no-aad", "aad"])
@pytest.mark.parametrize("length", LENGTHS)
def test_cb3_decrypts_the_crates_ciphertext(crate_output, aad, length):
    sealed = crate_output[aad, length]
    assert len(sealed) == length + cb3.TAG_SIZE
    cipher = cb3.ChaCha20Blake3(KEY)
    assert cipher.decrypt(NONCE, sealed, aad) == message(length)
    assert cipher.encrypt(NONCE, message(length), aad) == sealed
    ciphertext, tag = sealed[:-32], sealed[-32:]
    assert cipher.decrypt_detached(NONCE, ciphertext, tag, aad) == message(length)
    out = bytearray(length)
    assert cb3.ChaCha20Blake3(KEY, max_threads=2).decrypt_into(NONCE, sealed, aad, out) == length
    assert out == message(length)
    tampered = bytearray(sealed)
    tampered[length // 2] ^= 0x01
    with pytest.raises(cb3.DecryptionError):
        cipher.decrypt(NONCE, tampered, aad)
