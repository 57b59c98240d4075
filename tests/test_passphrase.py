"""cb3's passphrase format (docs/passphrase-format.md) and its Python API:
vectors from the independent implementation in reference.py (argon2-cffi,
blake3-py, pyca/cryptography), round trips, wrong passphrases, every header
byte changed, malformed and oversized headers, reader limits, key files, and
the chunked format's hardening on passphrase files.

    python tests/test_passphrase.py   prints the vectors file (tests/data/passphrase_vectors.json)
                                      as reference.py computes it
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import reference

DATA = Path(__file__).parent / "data" / "passphrase_vectors.json"
DOC = Path(__file__).parent.parent / "docs" / "passphrase-format.md"
KEY = bytes(range(1, 33))
PREFIX = bytes(range(0xA0, 0xAF))
PASSPHRASE = "correct horse battery staple"

# Inputs of the published vectors: plaintext byte i is 7 * i mod 256.
VECTOR_INPUTS: list[dict[str, Any]] = [
    {"name": "key file, small parameters", "purpose": 2, "passphrase": PASSPHRASE,
     "salt": bytes(range(0x50, 0x60)).hex(), "time_cost": 1, "memory_cost": 64, "parallelism": 1},
    {"name": "file, small parameters", "purpose": 1, "passphrase": PASSPHRASE,
     "salt": bytes(range(0x40, 0x50)).hex(), "time_cost": 1, "memory_cost": 64, "parallelism": 1,
     "chunk_size": 64, "aad": "", "length": 100},
    {"name": "file, non-ASCII passphrase, 32-byte salt", "purpose": 1, "passphrase": "Gr\u00fc\u00dfe, J\u00fcrgen \u2764",
     "salt": bytes(range(0x60, 0x80)).hex(), "time_cost": 2, "memory_cost": 256, "parallelism": 2,
     "chunk_size": 65536, "aad": "cb3 passphrase test", "length": 12},
    {"name": "key file, default parameters", "purpose": 2, "passphrase": PASSPHRASE,
     "salt": bytes(range(0x50, 0x60)).hex(), "time_cost": 3, "memory_cost": 65536, "parallelism": 4},
]
VECTORS: list[dict[str, Any]] = json.loads(DATA.read_text())


def plaintext(length: int) -> bytes:
    return bytes(7 * i % 256 for i in range(length))


def make_vectors() -> list[dict[str, Any]]:
    out = []
    for spec in VECTOR_INPUTS:
        passphrase = unicodedata.normalize("NFC", spec["passphrase"]).encode()
        params = dict(salt=bytes.fromhex(spec["salt"]), time_cost=spec["time_cost"],
                      memory_cost=spec["memory_cost"], parallelism=spec["parallelism"])
        vector = dict(spec, passphrase_utf8=passphrase.hex(), key=KEY.hex())
        if spec["purpose"] == reference.PASS_PURPOSE_KEY_FILE:
            output = reference.passphrase_header(passphrase, KEY, purpose=spec["purpose"], **params)
        else:
            pt = plaintext(spec["length"])
            vector.update(nonce_prefix=PREFIX.hex(), plaintext=pt.hex())
            output = reference.passphrase_encrypt(passphrase, pt, file_key=KEY, nonce_prefix=PREFIX,
                                                  chunk_size=spec["chunk_size"], aad=spec["aad"].encode(), **params)
        vector["output"] = output.hex()
        out.append(vector)
    return out


# ---- vectors: the reference alone ------------------------------------------------


def test_vectors_file_is_what_the_reference_computes() -> None:
    assert VECTORS == make_vectors()


def test_format_document_lists_the_vectors() -> None:
    doc = DOC.read_text()
    flat = "".join(line.strip() for line in doc.splitlines())
    for vector in VECTORS:
        assert vector["output"] in flat, vector["name"]
        assert f"**{vector['name']}**: " in doc
        assert f"time_cost {vector['time_cost']}, memory_cost {vector['memory_cost']}, " \
               f"parallelism {vector['parallelism']}" in doc
        assert vector["passphrase_utf8"] in doc and vector["salt"] in doc


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_reference_opens_the_vectors(vector: dict[str, Any]) -> None:
    passphrase, output = bytes.fromhex(vector["passphrase_utf8"]), bytes.fromhex(vector["output"])
    if vector["purpose"] == reference.PASS_PURPOSE_KEY_FILE:
        assert len(output) == 100
        assert reference.passphrase_open(output, passphrase, purpose=2) == KEY
        with pytest.raises(reference.ReferenceDecryptionError):
            reference.passphrase_open(output, passphrase + b"!", purpose=2)
    else:
        aad = vector["aad"].encode()
        assert reference.passphrase_decrypt(passphrase, output, aad) == bytes.fromhex(vector["plaintext"])
        with pytest.raises(reference.ReferenceDecryptionError):
            reference.passphrase_decrypt(passphrase, output, aad + b"x")


def test_vector_header_fields_are_where_the_document_says() -> None:
    for vector in VECTORS:
        out = bytes.fromhex(vector["output"])
        salt = bytes.fromhex(vector["salt"])
        assert out[:8] == b"CB3PASS\x01" and out[8] == vector["purpose"] and out[9] == 1
        assert int.from_bytes(out[10:14], "big") == vector["time_cost"]
        assert int.from_bytes(out[14:18], "big") == vector["memory_cost"]
        assert out[18] == vector["parallelism"] and out[19] == len(salt) and out[20 : 20 + len(salt)] == salt
        if vector["purpose"] == 1:
            assert out[84 + len(salt) :].startswith(b"CB3STRM\x01")


if __name__ == "__main__":
    json.dump(make_vectors(), sys.stdout, indent=1)
    print()
