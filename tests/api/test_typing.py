"""The stubs and the typed examples: the examples run correctly and the stub
names every public name. `mypy --strict cb3/_cb3.pyi tests/api/typing_examples.py`
runs once per test command, in scripts/test.sh: its verdict does not depend on
the interpreter that runs the tests."""

from __future__ import annotations

from pathlib import Path

import cb3
import typing_examples

ROOT = Path(__file__).resolve().parents[2]


def test_typing_examples_run() -> None:
    result = typing_examples.main()
    assert result["constants"] == (32, 24, 32, 2048, cb3.HPY_ABI, cb3.simd_backend(), cb3.__version__)
    assert result["errors"] == [
        "DecryptionError",
        "decryption failed",
        "errors module",
        "key must be 32 bytes, got 31",
    ]
    assert result["index"] == 2


def test_stub_lists_every_public_name() -> None:
    stub = (ROOT / "cb3" / "_cb3.pyi").read_text()
    import cb3._cb3 as ext

    for name in dir(ext):
        if name.startswith("_"):
            continue
        assert f"{name}" in stub, name
    for cls, methods in (
        (cb3.ChaCha20Blake3, ["encrypt", "decrypt", "encrypt_detached", "decrypt_detached",
                              "encrypt_into", "decrypt_into", "encrypt_in_place", "decrypt_in_place"]),
        (cb3.Stream, ["encrypt", "decrypt", "message_index"]),
    ):
        for m in methods:
            assert hasattr(cls, m)
            assert f"def {m}(" in stub
