"""cb3's passphrase format (docs/passphrase-format.md) and its Python API:
vectors from the independent implementation in reference.py (argon2-cffi,
blake3-py, pyca/cryptography), round trips, wrong passphrases, every header
byte changed, malformed and oversized headers, reader limits, key files, and
the chunked format's hardening on passphrase files.

    python tests/chunked/test_passphrase.py   prints the vectors file (tests/data/passphrase_vectors.json)
                                      as reference.py computes it
"""

from __future__ import annotations

import io
import json
import os
import resource
import stat
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import reference

try:
    import cb3
    import test_chunked_hardening as hardening
    from cb3 import _cb3, chunked
except ImportError:  # running as a script to print the vectors
    cb3 = None  # type: ignore[assignment]

DATA = Path(__file__).parents[1] / "data" / "passphrase_vectors.json"
DOC = Path(__file__).parents[2] / "docs" / "passphrase-format.md"
KEY = bytes(range(1, 33))
PREFIX = bytes(range(0xA0, 0xAF))
PASSPHRASE = "correct horse battery staple"
#: The cheapest valid derivation: every test below but the default-parameter ones uses it.
FAST = {"time_cost": 1, "memory_cost": 64, "parallelism": 1}
NFD = unicodedata.normalize("NFD", "Gr\u00fc\u00dfe, J\u00fcrgen \u2764")

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


# ---- vectors: cb3 against the reference ------------------------------------------


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_cb3_writes_and_opens_the_vectors(vector: dict[str, Any], tmp_path: Path) -> None:
    salt, output = bytes.fromhex(vector["salt"]), bytes.fromhex(vector["output"])
    params = (vector["time_cost"], vector["memory_cost"], vector["parallelism"])
    text, utf8 = vector["passphrase"], bytes.fromhex(vector["passphrase_utf8"])
    if vector["purpose"] == reference.PASS_PURPOSE_KEY_FILE:
        assert _cb3.passphrase_seal(utf8, KEY, 2, *params, salt) == output
        path = tmp_path / "key"
        path.write_bytes(output)
        assert cb3.unlock_key_file(path, text) == KEY
        assert cb3.unlock_key_file(path, utf8) == KEY
        return
    pt, aad = bytes.fromhex(vector["plaintext"]), vector["aad"].encode()
    options = dict(associated_data=aad, chunk_size=vector["chunk_size"], nonce_prefix=PREFIX,
                   passphrase=text, params=params, salt_and_file_key=(salt, KEY))
    out = io.BytesIO()
    chunked._encrypt_file(None, io.BytesIO(pt), out, **options)
    assert out.getvalue() == output
    out = io.BytesIO()
    with chunked._new_writer(out, None, **options) as writer:
        writer.write(pt)
    assert out.getvalue() == output
    for given in (text, utf8, unicodedata.normalize("NFD", text)):
        assert cb3.DecryptingReader(io.BytesIO(output), passphrase=given, associated_data=aad).read() == pt
    back = io.BytesIO()
    assert cb3.decrypt_file(src=io.BytesIO(output), dst=back, passphrase=text, associated_data=aad) == len(pt)
    assert back.getvalue() == pt


# ---- round trips ------------------------------------------------------------------


@pytest.mark.parametrize("passphrase", [PASSPHRASE, PASSPHRASE.encode(), bytearray(b"\xff\x00 raw bytes"), NFD],
                         ids=["str", "bytes", "bytearray-not-utf8", "nfd-str"])
@pytest.mark.parametrize("size", [0, 1, 64, 1000])
def test_round_trip(passphrase: Any, size: int) -> None:
    data = os.urandom(size)
    out = io.BytesIO()
    with cb3.EncryptingWriter(out, passphrase=passphrase, chunk_size=64, **FAST) as writer:
        writer.write(data)
    ct = out.getvalue()
    assert ct[:8] == b"CB3PASS\x01" and len(ct) == 100 + 27 + size + 32 * max(1, -(-size // 64))
    assert cb3.DecryptingReader(io.BytesIO(ct), passphrase=passphrase).read() == data


def test_nfc_and_nfd_are_one_passphrase_bytes_are_not_normalised() -> None:
    nfc = unicodedata.normalize("NFC", NFD)
    assert nfc != NFD
    ct = sealed(b"data", passphrase=nfc)
    assert cb3.DecryptingReader(io.BytesIO(ct), passphrase=NFD).read() == b"data"
    assert cb3.DecryptingReader(io.BytesIO(ct), passphrase=nfc.encode()).read() == b"data"
    with pytest.raises(cb3.WrongPassphrase):
        cb3.DecryptingReader(io.BytesIO(ct), passphrase=NFD.encode())  # bytes are used as given


def sealed(data: bytes, *, passphrase: Any = PASSPHRASE, chunk_size: int = 64, **options: Any) -> bytes:
    out = io.BytesIO()
    with cb3.EncryptingWriter(out, passphrase=passphrase, chunk_size=chunk_size, **{**FAST, **options}) as writer:
        writer.write(data)
    return out.getvalue()


@pytest.mark.parametrize("threads", [1, 2])
def test_file_helpers_paths_seek_and_threads(tmp_path: Path, threads: int) -> None:
    src, enc, dec = tmp_path / "in", tmp_path / "in.cb3", tmp_path / "out"
    data = os.urandom(300_000)
    src.write_bytes(data)
    assert cb3.encrypt_file(src=src, dst=enc, passphrase=PASSPHRASE, max_threads=threads, chunk_size=4096,
                            associated_data=b"ctx", **FAST) == len(data)
    assert cb3.decrypt_file(src=enc, dst=dec, passphrase=PASSPHRASE, max_threads=threads,
                            associated_data=b"ctx") == len(data)
    assert dec.read_bytes() == data
    assert reference.passphrase_decrypt(PASSPHRASE.encode(), enc.read_bytes(), b"ctx") == data
    with open(enc, "rb") as f, cb3.DecryptingReader(f, passphrase=PASSPHRASE, associated_data=b"ctx",
                                                    max_threads=threads) as reader:
        assert reader.seek(0, 2) == len(data)
        reader.seek(123_456)
        assert reader.read(10_000) == data[123_456:133_456]
        reader.seek(5)
        assert reader.read(3) == data[5:8]


def test_defaults_are_rfc_9106s_second_option_and_a_fresh_salt_and_key_each_time() -> None:
    first, second = io.BytesIO(), io.BytesIO()
    for out in (first, second):
        with cb3.EncryptingWriter(out, passphrase=PASSPHRASE) as writer:
            writer.write(b"x")
    a, b = first.getvalue(), second.getvalue()
    assert a[10:19] == (3).to_bytes(4, "big") + (65536).to_bytes(4, "big") + bytes([4]) and a[19] == 16
    assert a[20:36] != b[20:36] and a[36:100] != b[36:100] and a[100 + 12 : 127] != b[100 + 12 : 127]
    assert (cb3.kdf.DEFAULT_TIME_COST, cb3.kdf.DEFAULT_MEMORY_COST, cb3.kdf.DEFAULT_PARALLELISM) == (3, 65536, 4)
    assert cb3.DecryptingReader(io.BytesIO(a), passphrase=PASSPHRASE).read() == b"x"


# ---- the key or the passphrase, and what a passphrase may be -------------------------


def _calls(**given: Any) -> list[Callable[[], Any]]:
    return [
        lambda: cb3.EncryptingWriter(io.BytesIO(), **given),
        lambda: cb3.DecryptingReader(io.BytesIO(sealed(b"")), **given),
        lambda: cb3.encrypt_file(src=io.BytesIO(b""), dst=io.BytesIO(), **given),
        lambda: cb3.decrypt_file(src=io.BytesIO(sealed(b"")), dst=io.BytesIO(), **given),
    ]


@pytest.mark.parametrize("index", range(4), ids=["writer", "reader", "encrypt_file", "decrypt_file"])
def test_exactly_one_of_key_and_passphrase(index: int) -> None:
    for given in ({}, {"key": KEY, "passphrase": PASSPHRASE}):
        with pytest.raises(TypeError, match=r"a key or a passphrase= \(exactly one of the two\)"):
            _calls(**given)[index]()


@pytest.mark.parametrize("index", range(4), ids=["writer", "reader", "encrypt_file", "decrypt_file"])
def test_bad_passphrases_are_refused_by_name(index: int) -> None:
    for bad, error, words in [("", ValueError, "passphrase must not be empty"),
                              (b"", ValueError, "passphrase must not be empty"),
                              ("ab\ud800cd", ValueError, "passphrase is not valid text.*index 2"),
                              (12345, TypeError, "passphrase must be str or bytes, not int")]:
        with pytest.raises(error, match=words):
            _calls(passphrase=bad)[index]()


def test_helpers_name_a_missing_src_or_dst() -> None:
    with pytest.raises(TypeError, match="missing the argument 'dst'"):
        cb3.encrypt_file(src=io.BytesIO(b""), passphrase=PASSPHRASE)
    with pytest.raises(TypeError, match="missing the argument 'src'"):
        cb3.decrypt_file(dst=io.BytesIO(), passphrase=PASSPHRASE)


# ---- wrong passphrases, changed and malformed headers ------------------------------


def test_wrong_passphrase_is_a_decryption_error_and_writes_nothing(tmp_path: Path) -> None:
    enc = tmp_path / "f.cb3"
    enc.write_bytes(sealed(os.urandom(5000)))
    with pytest.raises(cb3.WrongPassphrase, match=r"^wrong passphrase, or a modified header$") as caught:
        cb3.decrypt_file(src=enc, dst=tmp_path / "out", passphrase="Correct horse battery staple")
    assert isinstance(caught.value, cb3.DecryptionError) and not isinstance(caught.value, cb3.ChunkedError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.cb3"]
    sink = io.BytesIO()
    with pytest.raises(cb3.WrongPassphrase):
        cb3.decrypt_file(src=enc, dst=sink, passphrase=b"nope")
    assert sink.getvalue() == b""


def test_a_key_on_a_passphrase_file_and_a_passphrase_on_a_key_stream_say_so() -> None:
    with pytest.raises(cb3.ChunkedHeaderError, match="a passphrase-protected file.*give its passphrase"):
        cb3.DecryptingReader(io.BytesIO(sealed(b"x")), KEY)
    out = io.BytesIO()
    with cb3.EncryptingWriter(out, KEY) as writer:
        writer.write(b"x")
    with pytest.raises(cb3.ChunkedHeaderError):
        cb3.DecryptingReader(io.BytesIO(out.getvalue()), passphrase=PASSPHRASE)


def test_every_header_byte_changed_fails_cleanly() -> None:
    """Each bit of each of the 100 header bytes flipped, one at a time: the
    file never opens, and the failure is a wrong passphrase (the wrap's tag),
    a malformed header or a parameter above the limits, never anything else."""
    ct = sealed(b"hello, world" * 10)
    seen: dict[type, int] = {}
    for position in range(100):
        for bit in range(8):
            changed = bytearray(ct)
            changed[position] ^= 1 << bit
            with pytest.raises((cb3.WrongPassphrase, cb3.ChunkedHeaderError, cb3.PassphraseLimitError)) as caught:
                cb3.DecryptingReader(io.BytesIO(bytes(changed)), passphrase=PASSPHRASE).read()
            seen[type(caught.value)] = seen.get(type(caught.value), 0) + 1
    assert seen.keys() == {cb3.WrongPassphrase, cb3.ChunkedHeaderError, cb3.PassphraseLimitError}, seen
    # The salt, the wrapped key and the tag (bytes 20 to 99) are authenticated only by the tag.
    assert seen[cb3.WrongPassphrase] >= 80 * 8


def test_a_changed_chunked_stream_after_the_header_fails_as_in_the_chunked_format() -> None:
    ct = bytearray(sealed(bytes(200)))
    for position in (100, 110, 126, 127, 200, len(ct) - 1):
        changed = bytearray(ct)
        changed[position] ^= 1
        with pytest.raises(cb3.ChunkedError):
            cb3.DecryptingReader(io.BytesIO(bytes(changed)), passphrase=PASSPHRASE).read()
    with pytest.raises(cb3.ChunkedTruncatedError):
        cb3.DecryptingReader(io.BytesIO(bytes(ct[:100 + 27])), passphrase=PASSPHRASE).read()


def test_a_payload_moved_under_another_header_fails_at_chunk_0() -> None:
    """Two files whose headers wrap the same key (a fixed salt and key, as
    only the test hook allows): the payload authenticates its own header."""
    def made(aad: bytes, data: bytes) -> bytes:
        out = io.BytesIO()
        chunked._encrypt_file(None, io.BytesIO(data), out, passphrase=PASSPHRASE, params=(1, 64, 1),
                              salt_and_file_key=(bytes(16), KEY), chunk_size=64, associated_data=aad)
        return out.getvalue()

    a, b = made(b"", b"A" * 100), made(b"", b"B" * 100)
    assert a[:100] == b[:100]  # the same header: the same salt, key and parameters
    c = made(b"", b"C" * 100)
    # Another header that wraps the same key: one parameter changed, sealed anew.
    resealed = _cb3.passphrase_seal(PASSPHRASE.encode(), KEY, 1, 2, 64, 1, bytes(16))
    assert resealed[:10] == c[:10] and resealed[10:14] != c[10:14]
    with pytest.raises(cb3.ChunkedError, match="chunk 0"):
        cb3.DecryptingReader(io.BytesIO(resealed + bytes(c[100:])), passphrase=PASSPHRASE).read()
    assert cb3.DecryptingReader(io.BytesIO(bytes(c)), passphrase=PASSPHRASE).read() == b"C" * 100


@pytest.mark.parametrize("cut", list(range(0, 100)))
def test_truncated_headers(cut: int) -> None:
    ct = sealed(b"data")
    with pytest.raises(cb3.ChunkedHeaderError):
        cb3.DecryptingReader(io.BytesIO(ct[:cut]), passphrase=PASSPHRASE)


def header(*, version: int = 1, purpose: int = 1, kdf: int = 1, time_cost: int = 1, memory_cost: int = 64,
           parallelism: int = 1, salt: bytes = bytes(16), tail: bytes = bytes(64)) -> bytes:
    """A header as the document lays it out (its tag not valid)."""
    return (b"CB3PASS" + bytes([version, purpose, kdf]) + time_cost.to_bytes(4, "big")
            + memory_cost.to_bytes(4, "big") + bytes([parallelism, len(salt)]) + salt + tail)


@pytest.mark.parametrize("fields, named", [
    ({"version": 0}, "version"), ({"version": 2}, "version"), ({"purpose": 0}, "purpose"),
    ({"purpose": 3}, "purpose"), ({"kdf": 0}, "kdf"), ({"kdf": 2}, "kdf"), ({"time_cost": 0}, "time_cost"),
    ({"parallelism": 0}, "parallelism"), ({"memory_cost": 7}, "memory_cost"),
    ({"memory_cost": 31, "parallelism": 4}, "memory_cost"), ({"salt": bytes(15)}, "salt"),
    ({"salt": bytes(65)}, "salt"), ({"salt": b""}, "salt"),
], ids=lambda v: repr(v) if isinstance(v, dict) else v)
def test_malformed_headers_are_refused_before_any_derivation(fields: dict[str, Any], named: str) -> None:
    bad = header(**fields) + sealed(b"x")[100:]
    started = time.perf_counter()
    with pytest.raises(cb3.ChunkedHeaderError):
        cb3.DecryptingReader(io.BytesIO(bad), passphrase=PASSPHRASE)
    assert time.perf_counter() - started < 0.5


def test_a_key_file_is_not_an_encrypted_file_nor_the_reverse(tmp_path: Path) -> None:
    key_file = tmp_path / "k"
    cb3.write_key_file(key_file, KEY, PASSPHRASE, **FAST)
    with pytest.raises(cb3.ChunkedHeaderError):
        cb3.DecryptingReader(io.BytesIO(key_file.read_bytes() + sealed(b"x")[100:]), passphrase=PASSPHRASE)
    enc = tmp_path / "f"
    enc.write_bytes(sealed(b"x")[:100])
    with pytest.raises(cb3.ChunkedHeaderError):
        cb3.unlock_key_file(enc, PASSPHRASE)


# ---- the reader's limits -------------------------------------------------------------


@pytest.mark.parametrize("parameter, value, keyword, limit", [
    ("time_cost", 11, "max_time_cost", 10),
    ("time_cost", 2**32 - 1, "max_time_cost", 10),
    ("memory_cost", 2 * 1024 * 1024 + 8, "max_memory_cost", 2 * 1024 * 1024),
    ("memory_cost", 2**32 - 1, "max_memory_cost", 2 * 1024 * 1024),
    ("parallelism", 65, "max_parallelism", 64),
    ("parallelism", 255, "max_parallelism", 64),
])
def test_a_header_above_a_limit_is_refused_naming_it(parameter: str, value: int, keyword: str, limit: int) -> None:
    fields = {"memory_cost": max(64, 8 * value)} if parameter == "parallelism" else {}
    bad = header(**{**fields, parameter: value}) + bytes(100)
    with pytest.raises(cb3.PassphraseLimitError) as caught:
        cb3.DecryptingReader(io.BytesIO(bad), passphrase=PASSPHRASE)
    error = caught.value
    assert (error.parameter, error.value, error.limit) == (parameter, value, limit)
    assert isinstance(error, ValueError) and not isinstance(error, cb3.DecryptionError)
    message = str(error)
    assert parameter in message and str(value) in message and str(limit) in message and f"{keyword}=" in message


def test_limit_error_from_its_fields_or_its_message() -> None:
    import pickle

    made = cb3.PassphraseLimitError("memory_cost", 4096, 1024)
    assert "memory_cost=4096 KiB" in str(made) and "limit of 1024 KiB" in str(made) and "max_memory_cost=4096" in str(made)
    again = cb3.PassphraseLimitError(str(made))
    for error in (made, again, pickle.loads(pickle.dumps(made))):
        assert (error.parameter, error.value, error.limit) == ("memory_cost", 4096, 1024)
    assert cb3.PassphraseLimitError("something else").parameter is None


def test_raising_a_limit_reads_the_file() -> None:
    ct = sealed(b"costly", time_cost=11)
    with pytest.raises(cb3.PassphraseLimitError, match="max_time_cost=11"):
        cb3.DecryptingReader(io.BytesIO(ct), passphrase=PASSPHRASE)
    assert cb3.DecryptingReader(io.BytesIO(ct), passphrase=PASSPHRASE, max_time_cost=11).read() == b"costly"
    back = io.BytesIO()
    cb3.decrypt_file(src=io.BytesIO(ct), dst=back, passphrase=PASSPHRASE, max_time_cost=11)
    assert back.getvalue() == b"costly"
    with pytest.raises(cb3.PassphraseLimitError, match="max_memory_cost=64"):
        cb3.DecryptingReader(io.BytesIO(ct), passphrase=PASSPHRASE, max_time_cost=11, max_memory_cost=63)


def test_a_100_byte_file_claiming_4_tib_costs_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "claims-4-tib"
    bad.write_bytes(header(memory_cost=2**32 - 1, time_cost=2**32 - 1, parallelism=255))
    assert bad.stat().st_size == 100
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    for _ in range(100):
        with pytest.raises(cb3.PassphraseLimitError):
            cb3.decrypt_file(src=bad, dst=tmp_path / "out", passphrase=PASSPHRASE)
    assert time.perf_counter() - started < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 16 * 1024  # KiB
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims-4-tib"]


# ---- key files -------------------------------------------------------------------------


def test_key_file_write_unlock_and_refusals(tmp_path: Path) -> None:
    path = tmp_path / "backup.key"
    cb3.write_key_file(path, KEY, PASSPHRASE, **FAST)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_size == 100
    assert path.read_bytes()[:9] == b"CB3PASS\x01\x02"
    key = cb3.unlock_key_file(str(path), PASSPHRASE)
    assert isinstance(key, bytearray) and key == KEY
    with pytest.raises(cb3.WrongPassphrase):
        cb3.unlock_key_file(path, "wrong")
    with pytest.raises(FileExistsError):
        cb3.write_key_file(path, cb3.generate_key(), PASSPHRASE, **FAST)
    assert cb3.unlock_key_file(path, PASSPHRASE) == KEY
    with pytest.raises(ValueError, match="key must be 32 bytes, not 31"):
        cb3.write_key_file(tmp_path / "short", KEY[:31], PASSPHRASE, **FAST)
    with pytest.raises(ValueError, match="passphrase must not be empty"):
        cb3.write_key_file(tmp_path / "empty", KEY, "", **FAST)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.key"]
    with pytest.raises(IsADirectoryError):
        cb3.unlock_key_file(tmp_path, PASSPHRASE)
    with pytest.raises(FileNotFoundError):
        cb3.unlock_key_file(tmp_path / "missing", PASSPHRASE)
    raw = tmp_path / "raw.key"
    raw.write_bytes(KEY)
    with pytest.raises(cb3.ChunkedHeaderError, match="not a cb3 passphrase-protected key file"):
        cb3.unlock_key_file(raw, PASSPHRASE)
    longer = tmp_path / "longer.key"
    longer.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(cb3.ChunkedHeaderError, match="101 bytes"):
        cb3.unlock_key_file(longer, PASSPHRASE)
    costly = tmp_path / "costly.key"
    cb3.write_key_file(costly, KEY, PASSPHRASE, time_cost=12, memory_cost=64, parallelism=1)
    with pytest.raises(cb3.PassphraseLimitError, match="max_time_cost=12"):
        cb3.unlock_key_file(costly, PASSPHRASE)
    assert cb3.unlock_key_file(costly, PASSPHRASE, max_time_cost=12) == KEY


def test_one_derivation_serves_many_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k"
    cb3.write_key_file(path, KEY, PASSPHRASE, **FAST)
    opened = []
    real_open = _cb3.passphrase_open
    monkeypatch.setattr(_cb3, "passphrase_open", lambda *args: opened.append(1) or real_open(*args))
    key = cb3.unlock_key_file(path, PASSPHRASE)
    for i in range(50):
        data = os.urandom(i * 37)
        enc = io.BytesIO()
        cb3.encrypt_file(key, io.BytesIO(data), enc)
        back = io.BytesIO()
        cb3.decrypt_file(key, io.BytesIO(enc.getvalue()), back)
        assert back.getvalue() == data and enc.getvalue()[:7] == b"CB3STRM"
    assert len(opened) == 1


def test_rewrap_keeps_the_key_and_the_files(tmp_path: Path) -> None:
    path = tmp_path / "k"
    cb3.write_key_file(path, KEY, PASSPHRASE, **FAST)
    before = path.read_bytes()
    enc = io.BytesIO()
    cb3.encrypt_file(cb3.unlock_key_file(path, PASSPHRASE), io.BytesIO(b"archive"), enc)
    cb3.rewrap_key_file(path, PASSPHRASE, "a new passphrase", time_cost=2, memory_cost=128, parallelism=2)
    after = path.read_bytes()
    assert after != before and after[20:36] != before[20:36]  # a new salt
    assert after[10:19] == (2).to_bytes(4, "big") + (128).to_bytes(4, "big") + bytes([2])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(cb3.WrongPassphrase):
        cb3.unlock_key_file(path, PASSPHRASE)
    key = cb3.unlock_key_file(path, "a new passphrase")
    assert key == KEY
    back = io.BytesIO()
    cb3.decrypt_file(key, io.BytesIO(enc.getvalue()), back)
    assert back.getvalue() == b"archive"
    with pytest.raises(cb3.WrongPassphrase):
        cb3.rewrap_key_file(path, PASSPHRASE, "another", **FAST)
    assert path.read_bytes() == after


def test_ctrl_c_during_the_derivation_leaves_no_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any) -> Any:
        raise KeyboardInterrupt

    src = tmp_path / "in"
    src.write_bytes(b"secret data")
    enc = tmp_path / "in.cb3"
    enc.write_bytes(sealed(b"secret data"))
    for name, call in [("passphrase_seal", lambda: cb3.encrypt_file(src=src, dst=tmp_path / "o1",
                                                                      passphrase=PASSPHRASE)),
                       ("passphrase_open", lambda: cb3.decrypt_file(src=enc, dst=tmp_path / "o2",
                                                                      passphrase=PASSPHRASE)),
                       ("passphrase_seal", lambda: cb3.write_key_file(tmp_path / "o3", KEY, PASSPHRASE))]:
        with monkeypatch.context() as patch:
            patch.setattr(_cb3, name, interrupted)
            with pytest.raises(KeyboardInterrupt):
                call()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "in.cb3"]


# ---- the chunked format's hardening, on passphrase files -------------------------------

@pytest.fixture
def passphrase_everywhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """cb3's writer, reader and file helpers, called with a key as the
    hardening tests call them, use a passphrase instead (the key ignored)."""
    real_writer, real_reader = cb3.EncryptingWriter, cb3.DecryptingReader
    real_encrypt, real_decrypt = cb3.encrypt_file, cb3.decrypt_file

    class EncryptingWriter(real_writer):  # type: ignore[valid-type, misc]
        def __init__(self, file: Any, key: Any = None, **options: Any) -> None:
            super().__init__(file, passphrase=PASSPHRASE, **{**FAST, **options})

    class DecryptingReader(real_reader):  # type: ignore[valid-type, misc]
        def __init__(self, file: Any, key: Any = None, **options: Any) -> None:
            super().__init__(file, passphrase=PASSPHRASE, **options)

    def encrypt_file(key: Any, src: Any, dst: Any, **options: Any) -> int:
        return real_encrypt(src=src, dst=dst, passphrase=PASSPHRASE, **{**FAST, **options})

    def decrypt_file(key: Any, src: Any, dst: Any, **options: Any) -> int:
        return real_decrypt(src=src, dst=dst, passphrase=PASSPHRASE, **options)

    for name, value in [("EncryptingWriter", EncryptingWriter), ("DecryptingReader", DecryptingReader),
                        ("encrypt_file", encrypt_file), ("decrypt_file", decrypt_file)]:
        monkeypatch.setattr(cb3, name, value)
        monkeypatch.setattr(chunked, name, value)
    yield


if cb3 is not None:  # the hardening module needs cb3

    @pytest.mark.usefixtures("passphrase_everywhere")
    class TestChunkedHardeningOnPassphraseFiles:
        """The hardening tests that hold for any file in the chunked format,
        run on passphrase files (the ones that build streams byte by byte, or
        look at a key stream's offsets, stay in test_chunked_hardening.py)."""

        test_seek_past_the_end_then_back_into_the_short_final_chunk = staticmethod(
            hardening.test_seek_past_the_end_then_back_into_the_short_final_chunk)
        test_an_exception_in_the_producer_never_seals_the_stream = staticmethod(
            hardening.test_an_exception_in_the_producer_never_seals_the_stream)
        test_a_wrapper_dropped_unclosed_never_seals = staticmethod(hardening.test_a_wrapper_dropped_unclosed_never_seals)
        test_a_wrapper_collected_after_a_crash_never_seals = staticmethod(
            hardening.test_a_wrapper_collected_after_a_crash_never_seals)
        test_wrappers_with_and_plain_close_still_seal = staticmethod(hardening.test_wrappers_with_and_plain_close_still_seal)
        test_same_file_is_refused = staticmethod(hardening.test_same_file_is_refused)
        test_writer_releases_the_callers_buffer = staticmethod(hardening.test_writer_releases_the_callers_buffer)
        test_reader_releases_the_callers_buffer = staticmethod(hardening.test_reader_releases_the_callers_buffer)


def test_the_hardening_tests_ran_on_passphrase_files(passphrase_everywhere: None) -> None:
    """The fixture does what the class relies on: a key call makes a passphrase file."""
    assert hardening.sealed(b"x")[:7] == b"CB3PASS"

if __name__ == "__main__":
    json.dump(make_vectors(), sys.stdout, indent=1)
    print()
