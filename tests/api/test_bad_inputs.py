"""The bad-input matrix: every public function and method gets every kind of
bad argument, one at a time, with all its other arguments valid. Each case
must raise its documented exception with a message that names the argument:
never a crash, never a silent success, never a changed output buffer (or a
moved Stream index), and never the key in the message.

The matrix is generated from one table, APIS: an entry is a callable, how to
make a valid call of it, and what kind each parameter is. A new API (hashing,
raw ChaCha, ...) is one more entry; a new kind of bad value is one more line
in the generator of its parameter kind. The run ends with a line
"bad-input matrix: N cases tried" (conftest.py, pytest_terminal_summary).

Documented errors (README, "Errors"), as checked here:
- not a buffer (str, None where not optional, int, float, list, object with
  only __len__, ...): TypeError "NAME must be a bytes-like object, not 'T'"
- non-contiguous (strided, reversed, Fortran-order, transposed, sliced
  multi-dimensional) buffers: BufferError "NAME must be a C-contiguous buffer"
- items that are not bytes (item size != 1, or formats like '?' or structs):
  BufferError "NAME must be a buffer of bytes (item size 1), not format ..."
- an exporter that refuses to export (released memoryview, closed mmap):
  its own ValueError, "NAME cannot be used as a buffer: ..."
- key, nonce, tag of the wrong length (0, 1, N - 1, N + 1, 2N, also as
  multi-dimensional arrays and through a lying __len__): ValueError
  "NAME must be N bytes, got M" (the real length, never len())
- read-only output: TypeError "NAME must be a writable buffer, not read-only ..."
- output of the wrong size: ValueError "NAME must be exactly S bytes (...), got M"
- a buffer that claims 2**62 bytes (ctypes over a 64-byte block): refused by
  its length alone, before a byte is read: ValueError for key, nonce, tag and
  outputs; MemoryError/OverflowError where the result could not be allocated
- surplus, unknown and duplicate arguments, keyword-only arguments passed
  positionally, missing arguments, a method called on the wrong object:
  TypeError naming the function and the argument
- forged, truncated, reordered or too-short ciphertexts: cb3.DecryptionError
- an exhausted Stream: OverflowError
"""

from __future__ import annotations

import array
import ctypes
import math
import mmap
import platform
import re
import tempfile
import types
from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np
import pytest

import cb3
import cb3._cb3
import cb3.capi
from cb3.chacha20 import ChaCha20, KeystreamExhaustedError, hchacha20
from helpers import CASE_COUNTS, sentinel

KEY = bytes(range(1, 33))
OTHER_KEY = bytes(range(2, 34))
NONCE = bytes(range(100, 124))
OTHER_NONCE = bytes(range(101, 125))
AAD = b"bad-input matrix header"
PT = bytes((i * 7 + 3) & 0xFF for i in range(600))  # more than one 256-byte ChaCha run
SMALL_PT = PT[:100]  # less than one run
BIG_PT = bytes((i * 13 + 5) & 0xFF for i in range(70_000))  # GIL released
HUGE = 1 << 62  # a length no buffer here really has
CPYTHON = platform.python_implementation() == "CPython"

Expected = Union[type[BaseException], tuple[type[BaseException], ...]]


def sealed(pt: bytes = PT, key: bytes = KEY, nonce: bytes = NONCE, aad: bytes = AAD) -> bytes:
    return cb3.ChaCha20Blake3(key).encrypt(nonce, pt, aad)


def flip(data: bytes, pos: int) -> bytes:
    b = bytearray(data)
    b[pos] ^= 0x01
    return bytes(b)


# ---- the table ---------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One parameter of an API. kind is one of:
    fixed  a read buffer of exactly `size` bytes (key, nonce, tag), or of one
           of `sizes` (then `size_text` is the message's "must be ..." part)
    data   a read buffer of any length
    aad    a read buffer of any length that may be None or absent
    out    a writable buffer of exactly Valid.out_size bytes
    outmin a writable buffer of at least Valid.out_size bytes
    inout  a writable buffer of any length (in place)
    int    an integer; `bad` lists its bad values
    """

    name: str
    kind: str
    size: int = 0
    none_ok: bool = False  # None means "empty" (associated_data)
    required: bool = True
    keyword_only: bool = False
    # What a buffer that claims HUGE bytes gives; None: not tried, because
    # the call would have to read it (a lying exporter is the caller's bug).
    huge: tuple[Expected, str] | None = None
    bad: tuple[tuple[str, Any, type[BaseException], str], ...] = ()
    sizes: tuple[int, ...] = ()
    size_text: str = ""


@dataclass
class Valid:
    """A valid call: fn(*positional, **keyword-only) must succeed."""

    fn: Callable[..., Any]
    args: dict[str, Any]
    out_size: int = 0
    state: Callable[[], Any] = lambda: None  # what a failure must not change


# An API-specific failure: (label, edit the valid call in place, exception, message regex).
Extra = tuple[str, Callable[[Valid], None], Expected, str]


@dataclass(frozen=True)
class Api:
    name: str
    valid: Callable[[], Valid]
    params: tuple[Param, ...] = ()
    extra: tuple[Extra, ...] = ()
    # For methods: the class and method name, to call it on a wrong object.
    method_of: tuple[type, str] | None = None


def nonce_p(name: str = "nonce") -> Param:
    return Param(name, "fixed", 24, huge=(ValueError, rf"^{name} must be 24 bytes, got {HUGE}$"))


KEY_P = Param("key", "fixed", 32, huge=(ValueError, rf"^key must be 32 bytes, got {HUGE}$"))
TAG_P = Param("tag", "fixed", 32, huge=(ValueError, rf"^tag must be 32 bytes, got {HUGE}$"))
AAD_P = Param("associated_data", "aad", none_ok=True, required=False)
AAD_REQUIRED_P = Param("associated_data", "aad", none_ok=True)  # the *_into methods
NO_MEMORY = ((MemoryError, OverflowError), "")  # the result cannot be allocated
DATA_ALLOC = Param("data", "data", huge=NO_MEMORY)
DATA_INTO = Param("data", "data", huge=(ValueError, r"^buf must be exactly \d+ bytes"))
BUF_OUT = Param("buf", "out", huge=(ValueError, rf"^buf must be exactly \d+ bytes \(.*\), got {HUGE}$"))
BUF_INOUT = Param("buf", "inout")

_INT_TYPES = (("str", "2"), ("float", 2.0), ("None", None), ("bytes", b"\x02"), ("list", [2]), ("complex", 2j),
              ("bool", True))


def int_errors(
    name: str, values: dict[str, tuple[int, ...]], exc: type[BaseException] = ValueError
) -> tuple[tuple[str, Any, type[BaseException], str], ...]:
    """cb3's integer policy (cext/args.c, one converter): any int or object
    with __index__ (test_integer_spellings), but TypeError "NAME must be an
    int, not 'T'" for everything else, bool included (True as a count or an
    index is a misuse sign); `exc` with the given message regex for each
    value. cb3.blake3 follows blake3-py instead (test_blake3_integers_follow_blake3_py)."""
    types = tuple(
        (label, value, TypeError, rf"^{name} must be an int, not '{type(value).__name__}'$") for label, value in _INT_TYPES
    )
    return types + tuple(
        (f"value-{value}", value, exc, message) for message, bad in values.items() for value in bad
    )


MAX_THREADS_P = Param(
    "max_threads", "int", required=False, keyword_only=True,
    bad=int_errors("max_threads", {
        r"^max_threads must be a positive int or cb3.AUTO \(-1\)": (0, -2, -(2**70), 2**64, 2**70),
    }),
)
MESSAGE_INDEX_P = Param(
    "message_index", "int", required=False, keyword_only=True,
    bad=int_errors("message_index", {
        r"^message_index must be in range\(0, 2\*\*64 - 1\)$": (-1, 2**64 - 1, 2**64, 2**100, -(2**70)),
    }),
)


_NONCE12 = bytes(range(12))
COUNTER_P = Param(
    "counter", "int", required=False, keyword_only=True,
    bad=int_errors("counter", {
        r"^counter must not be negative$": (-1, -(2**70)),
        r"^counter must be less than 2\*\*32 with a 12- or 24-byte nonce, got 4294967296$": (2**32,),
        r"^counter must be less than 2\*\*64$": (2**64, 2**100),
    }),
)
ROUNDS_P = Param(
    "rounds", "int", required=False, keyword_only=True,
    bad=int_errors("rounds", {
        **{rf"^rounds must be 20, 12 or 8, got {n}$": (n,) for n in (0, 7, 10, 16, 21)},
        r"^rounds must not be negative$": (-1,),
        r"^rounds must be less than 2\*\*64$": (2**64,),
    }),
)
POSITION_P = Param(
    "position", "int",
    bad=int_errors("position", {
        r"^position must not be negative$": (-1, -(2**70)),
        r"^position must be at most the end of the keystream \(2\*\*38 bytes with a 12- or 24-byte nonce\)$": (
            2**38 + 1, 2**64, 2**100),
    }),
)
CHACHA_NONCE_TEXT = r"must be 8 bytes \(original ChaCha\), 12 bytes \(RFC 8439\) or 24 bytes \(XChaCha\)"
CHACHA_NONCE_P = Param(
    "nonce", "fixed", 12, sizes=(8, 12, 24), size_text=CHACHA_NONCE_TEXT,
    huge=(ValueError, rf"^nonce {CHACHA_NONCE_TEXT}, got {HUGE}$"),
)


#: The output length of the one-shot BLAKE3 functions: cb3's policy, with
#: blake3-py's OverflowError below 0.
LENGTH_P = Param(
    "length", "int", required=False,
    bad=int_errors("length", {r"^length must not be negative$": (-1,), r"length": (2**100,)}, OverflowError),
)

#: Public callables whose bad inputs are tested elsewhere, because their error
#: contract is blake3-py's rather than cb3's (positional-only `data`, a str
#: `context`): tests/api/test_hash.py mirrors blake3-py's own error tests for them.
COVERED_BY_TEST_HASH = {
    "blake3", "blake3.blake3", "blake3.copy", "blake3.digest", "blake3.hexdigest",
    "blake3.reset", "blake3.update", "blake3.update_mmap", "derive_key",
}

#: The chunked stream API (cb3/chunked/): file objects whose error contract
#: is io's (a closed file: ValueError; an unsupported operation:
#: io.UnsupportedOperation); tests/chunked/test_chunked.py tests their bad inputs
#: (test_bad_arguments, test_bad_method_arguments).
COVERED_BY_TEST_CHUNKED = {
    "EncryptingWriter", "EncryptingWriter.abort", "EncryptingWriter.close", "EncryptingWriter.finish",
    "EncryptingWriter.flush",
    "EncryptingWriter.readable", "EncryptingWriter.seekable", "EncryptingWriter.writable", "EncryptingWriter.write",
    "DecryptingReader", "DecryptingReader.chunks", "DecryptingReader.close", "DecryptingReader.read",
    "DecryptingReader.read1", "DecryptingReader.readable", "DecryptingReader.readinto", "DecryptingReader.readinto1",
    "DecryptingReader.readline", "DecryptingReader.seek", "DecryptingReader.seekable", "DecryptingReader.writable",
    "encrypt_file", "decrypt_file",
}

#: The passphrase key files (cb3/chunked/passphrase.py): tests/chunked/test_passphrase.py
#: tests their bad inputs (test_key_file_write_unlock_and_refusals,
#: test_bad_passphrases_are_refused_by_name).
COVERED_BY_TEST_PASSPHRASE = {"write_key_file", "unlock_key_file", "rewrap_key_file"}


def _cipher(key: bytes = KEY) -> cb3.ChaCha20Blake3:
    return cb3.ChaCha20Blake3(key)


def _forgeries(
    data_name: str, *, combined: bool, tag_name: str | None = None, nonce: bool = True, into: bool = False
) -> tuple[Extra, ...]:
    """Forged, truncated and mismatched inputs for a decrypting API: each
    must raise DecryptionError and leave every output as it was. (For
    decrypt_into a ciphertext of 32 bytes or more whose length does not fit
    `buf` is a ValueError: the size is checked before authentication.)"""
    edits: list[tuple[str, Callable[[Valid], None]]] = []

    def edit(name: str, change: Callable[[bytes], bytes]) -> Callable[[Valid], None]:
        def apply(v: Valid) -> None:
            value = v.args[name]
            new = change(bytes(value))
            v.args[name] = bytearray(new) if isinstance(value, bytearray) else new

        return apply

    def put(name: str, value: Any) -> Callable[[Valid], None]:
        return lambda v: v.args.__setitem__(name, value)

    n = len(PT) + (32 if combined else 0)
    for label, pos in (("first", 0), ("middle", n // 2), ("last", n - 1)):
        edits.append((f"forged-{data_name}-{label}-byte", edit(data_name, lambda d, p=pos: flip(d, p))))
    if tag_name is not None:
        for label, pos in (("first", 0), ("last", 31)):
            edits.append((f"forged-{tag_name}-{label}-byte", edit(tag_name, lambda d, p=pos: flip(d, p))))
        edits.append((f"{tag_name}-all-zero", put(tag_name, bytes(32))))
    if combined:
        for length in (0, 1, 31):
            edits.append((f"{data_name}-only-{length}-bytes", edit(data_name, lambda d, k=length: d[:k])))
    edits.append(("wrong-associated-data", put("associated_data", AAD + b"!")))
    edits.append(("associated-data-none", put("associated_data", None)))
    if nonce:
        edits.append(("wrong-nonce", put("nonce", OTHER_NONCE)))
    out: list[Extra] = [(label, apply, cb3.DecryptionError, r"^decryption failed") for label, apply in edits]
    if combined:
        wrong_size = (ValueError, r"^buf must be exactly \d+ bytes") if into else (cb3.DecryptionError, r"^decryption failed")
        out.append((f"{data_name}-tag-only", edit(data_name, lambda d: d[-32:]), *wrong_size))
        out.append((f"{data_name}-truncated-by-1", edit(data_name, lambda d: d[:-1]), *wrong_size))
        out.append((f"{data_name}-extended-by-1", edit(data_name, lambda d: d + b"\0"), *wrong_size))
    return tuple(out)


def _with_other_key(method: str) -> Extra:
    def apply(v: Valid) -> None:
        v.fn = getattr(_cipher(OTHER_KEY), method)

    return ("wrong-key", apply, cb3.DecryptionError, r"^decryption failed")


def _forged(method: str, plaintext: bytes, position: int) -> Extra:
    """A message sealed over `plaintext` with one bit flipped at `position`,
    in the shape that `method` takes it."""
    forged = flip(sealed(plaintext), position)

    def apply(v: Valid) -> None:
        if method in ("decrypt", "stream.decrypt"):
            v.args["data"] = forged
        elif method == "decrypt_into":
            v.args["data"] = forged
            v.args["buf"] = bytearray(sentinel(len(plaintext)))
        elif method == "decrypt_detached":
            v.args["data"], v.args["tag"] = forged[:-32], forged[-32:]
        elif method == "decrypt_in_place":
            v.args["buf"], v.args["tag"] = bytearray(forged[:-32]), forged[-32:]

    return (f"forged-{len(plaintext)}-bytes", apply, cb3.DecryptionError, r"^decryption failed")


def _big(method: str) -> Extra:
    """A forged message above the GIL threshold (the GIL-released path)."""
    return _forged(method, BIG_PT, len(BIG_PT) // 3)


def _small(method: str) -> Extra:
    """The same forgery on a message shorter than one ChaCha run."""
    return _forged(method, SMALL_PT, 5)


def _cipher_api(
    method: str,
    args: Callable[[], dict[str, Any]],
    params: tuple[Param, ...],
    *,
    out_size: int = 0,
    forgeries: tuple[Extra, ...] | None = None,
) -> Api:
    """The entry of a ChaCha20Blake3 method. A decrypting one (`forgeries`
    given) must refuse those, then a wrong key and a forged short and long
    message."""
    extra = () if forgeries is None else (*forgeries, _with_other_key(method), _small(method), _big(method))
    return Api(
        f"ChaCha20Blake3.{method}",
        lambda: Valid(getattr(_cipher(), method), args(), out_size),
        params,
        extra=extra,
        method_of=(cb3.ChaCha20Blake3, method),
    )


def _stream_valid(method: str) -> Callable[[], Valid]:
    def make() -> Valid:
        stream = cb3.Stream(KEY, NONCE)
        data = PT if method == "encrypt" else sealed(PT)
        return Valid(getattr(stream, method), {"data": data, "associated_data": AAD}, state=lambda: stream.message_index)

    return make


def _exhausted(method: str) -> Extra:
    def apply(v: Valid) -> None:
        stream = cb3.Stream(KEY, NONCE, message_index=2**64 - 2)
        stream.encrypt(b"")  # the last index: every call fails from now on
        v.fn = getattr(stream, method)
        v.state = lambda: stream.message_index

    return ("stream-exhausted", apply, OverflowError, r"exhausted")


def _reordered(v: Valid) -> None:
    v.args["data"] = cb3.Stream(KEY, NONCE, message_index=1).encrypt(PT, AAD)  # message 1 at index 0


def _no_args(name: str, fn: Callable[..., Any]) -> Api:
    return Api(name, lambda: Valid(fn, {}))


def _chacha_method(method: str, args: Callable[[], dict[str, Any]], out_size: int = 0) -> Callable[[], Valid]:
    def make() -> Valid:
        cipher = ChaCha20(KEY, _NONCE12)
        return Valid(getattr(cipher, method), args(), out_size, state=lambda: cipher.position)

    return make


def _keystream_end(method: str) -> Extra:
    def apply(v: Valid) -> None:
        cipher = ChaCha20(KEY, _NONCE12, counter=2**32 - 1)
        cipher.seek(2**38 - 1)  # one byte left
        v.fn = getattr(cipher, method)
        v.state = lambda: cipher.position

    return ("keystream-exhausted", apply, KeystreamExhaustedError, r"^.*nothing was processed")


def _overlap(v: Valid) -> None:
    shared = bytearray(sentinel(len(PT) + 1))
    v.args["data"], v.args["out"] = memoryview(shared)[: len(PT)], memoryview(shared)[1:]


_SEALED = sealed()
_CT, _TAG = _SEALED[:-32], _SEALED[-32:]

#: Every public function and method. New APIs: add an entry.
APIS: list[Api] = [
    Api("ChaCha20Blake3", lambda: Valid(cb3.ChaCha20Blake3, {"key": KEY}), (KEY_P, MAX_THREADS_P)),
    _cipher_api(
        "encrypt", lambda: {"nonce": NONCE, "data": PT, "associated_data": AAD}, (nonce_p(), DATA_ALLOC, AAD_P)
    ),
    _cipher_api(
        "decrypt",
        lambda: {"nonce": NONCE, "data": _SEALED, "associated_data": AAD},
        (nonce_p(), DATA_ALLOC, AAD_P),
        forgeries=_forgeries("data", combined=True),
    ),
    _cipher_api(
        "encrypt_detached",
        lambda: {"nonce": NONCE, "data": PT, "associated_data": AAD},
        (nonce_p(), DATA_ALLOC, AAD_P),
    ),
    _cipher_api(
        "decrypt_detached",
        lambda: {"nonce": NONCE, "data": _CT, "tag": _TAG, "associated_data": AAD},
        (nonce_p(), DATA_ALLOC, TAG_P, AAD_P),
        forgeries=(
            *_forgeries("data", combined=False, tag_name="tag"),
            ("data-empty", lambda v: v.args.__setitem__("data", b""), cb3.DecryptionError, r"^decryption failed"),
        ),
    ),
    _cipher_api(
        "encrypt_into",
        lambda: {"nonce": NONCE, "data": PT, "associated_data": AAD, "buf": bytearray(sentinel(len(PT) + 32))},
        (nonce_p(), DATA_INTO, AAD_REQUIRED_P, BUF_OUT),
        out_size=len(PT) + 32,
    ),
    _cipher_api(
        "decrypt_into",
        lambda: {"nonce": NONCE, "data": _SEALED, "associated_data": AAD, "buf": bytearray(sentinel(len(PT)))},
        (nonce_p(), DATA_INTO, AAD_REQUIRED_P, BUF_OUT),
        out_size=len(PT),
        forgeries=_forgeries("data", combined=True, into=True),
    ),
    _cipher_api(
        "encrypt_in_place",
        lambda: {"nonce": NONCE, "buf": bytearray(PT), "associated_data": AAD},
        (nonce_p(), BUF_INOUT, AAD_P),
    ),
    _cipher_api(
        "decrypt_in_place",
        lambda: {"nonce": NONCE, "buf": bytearray(_CT), "tag": _TAG, "associated_data": AAD},
        (nonce_p(), BUF_INOUT, TAG_P, AAD_P),
        forgeries=_forgeries("buf", combined=False, tag_name="tag"),
    ),
    Api(
        "Stream",
        lambda: Valid(cb3.Stream, {"key": KEY, "nonce": NONCE}),
        (KEY_P, nonce_p(), MESSAGE_INDEX_P),
    ),
    Api(
        "Stream.encrypt",
        _stream_valid("encrypt"),
        (DATA_ALLOC, AAD_P),
        extra=(_exhausted("encrypt"),),
        method_of=(cb3.Stream, "encrypt"),
    ),
    Api(
        "Stream.decrypt",
        _stream_valid("decrypt"),
        (DATA_ALLOC, AAD_P),
        extra=(
            *_forgeries("data", combined=True, nonce=False),
            ("reordered-message", _reordered, cb3.DecryptionError, r"^decryption failed"),
            _small("stream.decrypt"),
            _exhausted("decrypt"),
        ),
        method_of=(cb3.Stream, "decrypt"),
    ),
    Api(
        "ChaCha20",
        lambda: Valid(ChaCha20, {"key": KEY, "nonce": _NONCE12}),
        (KEY_P, CHACHA_NONCE_P, COUNTER_P, ROUNDS_P),
    ),
    Api(
        "ChaCha20.update",
        _chacha_method("update", lambda: {"data": PT}),
        (DATA_ALLOC,),
        extra=(_keystream_end("update"),),
        method_of=(ChaCha20, "update"),
    ),
    Api(
        "ChaCha20.update_into",
        _chacha_method("update_into", lambda: {"data": PT, "out": bytearray(sentinel(len(PT)))}, out_size=len(PT)),
        (Param("data", "data"), Param("out", "outmin")),
        extra=(
            _keystream_end("update_into"),
            ("out-overlaps-data", _overlap, ValueError, r"overlap"),
        ),
        method_of=(ChaCha20, "update_into"),
    ),
    Api(
        "ChaCha20.xor_in_place",
        _chacha_method("xor_in_place", lambda: {"buf": bytearray(PT)}),
        (BUF_INOUT,),
        extra=(_keystream_end("xor_in_place"),),
        method_of=(ChaCha20, "xor_in_place"),
    ),
    Api("ChaCha20.seek", _chacha_method("seek", lambda: {"position": 64}), (POSITION_P,), method_of=(ChaCha20, "seek")),
    Api(
        "hchacha20",
        lambda: Valid(hchacha20, {"key": KEY, "nonce": NONCE[:16]}),
        (KEY_P, Param("nonce", "fixed", 16, huge=(ValueError, rf"^nonce must be 16 bytes, got {HUGE}$"))),
    ),
    # A buffer lying about a huge length is not tried for the hashes: they
    # would have to read it (the output size does not depend on it).
    Api("hash", lambda: Valid(cb3.hash, {"data": PT, "length": 40}), (Param("data", "data"), LENGTH_P)),
    Api(
        "keyed_hash",
        lambda: Valid(cb3.keyed_hash, {"key": KEY, "data": PT, "length": 40}),
        (KEY_P, Param("data", "data"), LENGTH_P),
    ),
    _no_args("generate_key", cb3.generate_key),
    _no_args("generate_nonce", cb3.generate_nonce),
    _no_args("ChaCha20Blake3.generate_key", cb3.ChaCha20Blake3.generate_key),
    _no_args("simd_backend", cb3.simd_backend),
    _no_args("_cb3.version", cb3._cb3.version),
    _no_args("get_include", cb3.get_include),
    _no_args("get_library_dir", cb3.get_library_dir),
    _no_args("get_libraries", cb3.get_libraries),
    _no_args("get_link_args", cb3.get_link_args),
]


# ---- bad values by parameter kind -------------------------------------------

# A message regex, or a function of the (edited) call that gives it.
Message = Union[str, Callable[[Valid], str]]
# (label, make(valid) -> value, exception, message)
Bad = tuple[str, Callable[[Valid], Any], Expected, Message]


class OnlyLen:
    """Not a buffer, but claims to be huge."""

    def __len__(self) -> int:
        return HUGE


class OnlyBytes:
    """Not a buffer, but convertible with bytes()."""

    def __bytes__(self) -> bytes:
        return KEY


class LyingBytes(bytes):
    """A bytes object whose len() lies: cb3 must use the real size."""

    def __len__(self) -> int:
        return 32


class LyingBytearray(bytearray):
    claimed = 0

    def __len__(self) -> int:
        return self.claimed


def lying_bytearray(real: int, claimed: int) -> LyingBytearray:
    b = LyingBytearray(sentinel(real))
    b.claimed = claimed
    return b


def fake_huge() -> Any:
    """A writable ctypes buffer that claims HUGE bytes over a 64-byte block.
    cb3 must refuse it by its length before reading or writing a byte."""
    backing = ctypes.create_string_buffer(bytes(sentinel(64)), 64)
    fake = (ctypes.c_char * HUGE).from_address(ctypes.addressof(backing))
    fake._cb3_backing = backing  # keeps the block alive; checked unchanged
    return fake


def released_view(n: int) -> memoryview:
    view = memoryview(bytearray(n))
    view.release()
    return view


def closed_mmap(n: int) -> mmap.mmap:
    m = mmap.mmap(-1, max(n, 1))
    m.close()
    return m


def readonly_mmap(n: int) -> Any:
    with tempfile.TemporaryFile() as f:
        f.write(sentinel(max(n, 1)))
        f.flush()
        return mmap.mmap(f.fileno(), max(n, 1), access=mmap.ACCESS_READ)


def wrong_types(name: str, none_ok: bool) -> list[Bad]:
    def not_bytes(type_name: str) -> str:
        return rf"^{name} must be a bytes-like object, not '{re.escape(type_name)}'$"

    values: list[tuple[str, Callable[[], Any]]] = [
        ("int", lambda: 24),
        ("int-zero", lambda: 0),
        ("int-negative", lambda: -1),
        ("int-huge", lambda: 2**100),
        ("bool", lambda: True),
        ("float", lambda: 1.5),
        ("float-nan", lambda: math.nan),
        ("float-inf", lambda: math.inf),
        ("complex", lambda: 1j),
        ("list-of-ints", lambda: [0] * 32),
        ("tuple-of-ints", lambda: (0,) * 32),
        ("list-of-bytes", lambda: [b"\0"] * 32),
        ("dict", lambda: {}),
        ("set", lambda: set()),
        ("object", lambda: object()),
        ("type", lambda: bytes),
        ("generator", lambda: (b for b in KEY)),
        ("len-only-huge", OnlyLen),
        ("bytes-convertible", OnlyBytes),
        ("range", lambda: range(32)),
    ]
    out: list[Bad] = [
        (f"type-{label}", lambda v, f=factory: f(), TypeError, not_bytes(type(factory()).__name__))
        for label, factory in values
    ]
    encode = rf"^{name} must be a bytes-like object, not 'str' \(encode it first\)$"
    out += [
        ("type-str", lambda v: "x" * 32, TypeError, encode),
        ("type-str-empty", lambda v: "", TypeError, encode),
        ("type-str-subclass", lambda v: type("StrSubclass", (str,), {})("k"), TypeError, encode),
    ]
    if not none_ok:
        out.append(("type-None", lambda v: None, TypeError, not_bytes("NoneType")))
    return out


def bad_layouts(name: str) -> list[Bad]:
    contiguous = rf"^{name} must be a C-contiguous buffer$"
    items = rf"^{name} must be a buffer of bytes \(item size 1\), not format '.*'$"
    unusable = rf"^{name} cannot be used as a buffer: "
    return [
        ("layout-memoryview-step-2", lambda v: memoryview(bytearray(64))[::2], BufferError, contiguous),
        ("layout-memoryview-bytes-step-2", lambda v: memoryview(bytes(64))[::2], BufferError, contiguous),
        ("layout-memoryview-reversed", lambda v: memoryview(bytearray(32))[::-1], BufferError, contiguous),
        ("layout-numpy-step-2", lambda v: np.zeros(64, np.uint8)[::2], BufferError, contiguous),
        ("layout-numpy-2d-fortran", lambda v: np.zeros((4, 8), np.uint8, order="F"), BufferError, contiguous),
        ("layout-numpy-2d-column-slice", lambda v: np.zeros((4, 16), np.uint8)[:, :8], BufferError, contiguous),
        ("layout-numpy-2d-transposed", lambda v: np.zeros((4, 8), np.uint8).T, BufferError, contiguous),
        ("layout-numpy-3d-strided", lambda v: np.zeros((2, 4, 8), np.uint8)[:, ::2, :], BufferError, contiguous),
        ("layout-memoryview-2d-fortran", lambda v: memoryview(np.zeros((4, 8), np.uint8, order="F")), BufferError,
         contiguous),
        ("items-array-I", lambda v: array.array("I", [0] * 8), BufferError, items),
        ("items-array-H", lambda v: array.array("H", [0] * 16), BufferError, items),
        ("items-array-d", lambda v: array.array("d", [0.0] * 4), BufferError, items),
        ("items-numpy-int32", lambda v: np.zeros(8, np.int32), BufferError, items),
        ("items-numpy-uint16", lambda v: np.zeros(16, np.uint16), BufferError, items),
        ("items-numpy-float64", lambda v: np.zeros(4, np.float64), BufferError, items),
        ("items-numpy-bool", lambda v: np.zeros(32, np.bool_), BufferError, items),
        ("items-numpy-struct-1-byte", lambda v: np.zeros(32, dtype=[("a", "u1")]), BufferError, items),
        ("items-numpy-2d-int16", lambda v: np.zeros((4, 4), np.int16), BufferError, items),
        ("items-memoryview-cast-I", lambda v: memoryview(bytearray(32)).cast("I"), BufferError, items),
        ("items-memoryview-cast-bool", lambda v: memoryview(bytearray(32)).cast("?"), BufferError, items),
        ("items-memoryview-2d-I", lambda v: memoryview(bytearray(32)).cast("I", shape=[2, 4]), BufferError, items),
        ("items-ctypes-int-array", lambda v: (ctypes.c_int * 8)(), BufferError, items),
        # PyPy's message: "map closed or invalid".
        ("unusable-closed-mmap", lambda v: closed_mmap(32), ValueError, unusable + "m?map closed"),
    ] + (
        # PyPy 7.3.19 segfaults converting a released memoryview for an HPy
        # call, before cb3 runs (docs/pypy.md): CPython only.
        [("unusable-released-memoryview", lambda v: released_view(32), ValueError, unusable + "operation forbidden")]
        if platform.python_implementation() != "PyPy"
        else []
    )


def fixed_lengths(p: Param) -> list[Bad]:
    n = p.size
    sizes = p.sizes or (n,)

    def wrong(got: int) -> str:
        return rf"^{p.name} {p.size_text or f'must be {n} bytes'}, got {got}$"

    out: list[Bad] = []
    for length in sorted({0, 1, *(k + d for k in sizes for d in (-1, 1, k))} - set(sizes)):
        out += [
            (f"length-{length}-bytes", lambda v, k=length: bytes(k), ValueError, wrong(length)),
            (f"length-{length}-bytearray", lambda v, k=length: bytearray(k), ValueError, wrong(length)),
            (f"length-{length}-memoryview-slice", lambda v, k=length: memoryview(bytes(k + 8))[4 : 4 + k], ValueError,
             wrong(length)),
        ]
    out += [
        ("length-numpy-2d", lambda v: np.zeros((2, n // 2 + 1), np.uint8), ValueError, wrong(n + 2)),
        ("length-numpy-3d", lambda v: np.zeros((2, 2, n // 4 + 1), np.uint8), ValueError, wrong(n + 4)),
        ("length-numpy-0d", lambda v: np.array(7, np.uint8), ValueError, wrong(1)),
        ("length-lying-len-bytes", lambda v: LyingBytes(bytes(n - 1)), ValueError, wrong(n - 1)),
        ("length-lying-len-bytearray", lambda v: lying_bytearray(n + 1, n), ValueError, wrong(n + 1)),
    ]
    return out


def read_only_outputs(name: str) -> list[Bad]:
    msg = rf"^{name} must be a writable buffer, not read-only '"
    return [
        ("readonly-bytes", lambda v: bytes(sentinel(max(v.out_size, 1))), TypeError, msg),
        ("readonly-memoryview-bytes", lambda v: memoryview(bytes(max(v.out_size, 1))), TypeError, msg),
        ("readonly-memoryview-toreadonly", lambda v: memoryview(bytearray(max(v.out_size, 1))).toreadonly(), TypeError,
         msg),
        ("readonly-numpy", lambda v: np.frombuffer(bytes(max(v.out_size, 1)), np.uint8), TypeError, msg),
        ("readonly-mmap", lambda v: readonly_mmap(max(v.out_size, 1)), TypeError, msg),
    ]


def output_sizes(name: str) -> list[Bad]:
    def wrong(v: Valid) -> str:
        got = memoryview(v.args[name]).nbytes  # the real size, whatever len() says
        return rf"^{name} must be exactly {v.out_size} bytes \(.*\), got {got}$"

    out: list[Bad] = []
    for label, delta in (("minus-1", -1), ("plus-1", 1), ("minus-32", -32), ("plus-32", 32)):
        out += [
            (f"size-{label}-bytearray", lambda v, d=delta: bytearray(sentinel(v.out_size + d)), ValueError, wrong),
            (f"size-{label}-numpy", lambda v, d=delta: np.frombuffer(sentinel(v.out_size + d), np.uint8).copy(),
             ValueError, wrong),
            (f"size-{label}-memoryview-slice",
             lambda v, d=delta: memoryview(bytearray(sentinel(v.out_size + d + 8)))[4:-4], ValueError, wrong),
        ]
    out += [
        ("size-0", lambda v: bytearray(), ValueError, wrong),
        ("size-1", lambda v: bytearray(1), ValueError, wrong),
        ("size-numpy-2d", lambda v: np.zeros((2, v.out_size // 2 + 1), np.uint8), ValueError, wrong),
        ("size-lying-len-bytearray", lambda v: lying_bytearray(v.out_size + 1, v.out_size), ValueError, wrong),
    ]
    return out


def short_outputs(name: str) -> list[Bad]:
    def wrong(v: Valid) -> str:
        got = memoryview(v.args[name]).nbytes
        return rf"^{name} must be at least len\(data\) = {v.out_size} bytes, got {got}$"

    return [
        ("size-minus-1-bytearray", lambda v: bytearray(sentinel(v.out_size - 1)), ValueError, wrong),
        ("size-minus-1-memoryview-slice", lambda v: memoryview(bytearray(sentinel(v.out_size + 7)))[4:-4], ValueError,
         wrong),
        ("size-0", lambda v: bytearray(), ValueError, wrong),
        ("size-lying-len-bytearray", lambda v: lying_bytearray(v.out_size - 1, v.out_size), ValueError, wrong),
    ]


def bad_values(p: Param) -> list[Bad]:
    if p.kind == "int":
        return [(f"{label}", lambda v, x=value: x, exc, msg) for label, value, exc, msg in p.bad]
    out = wrong_types(p.name, p.none_ok) + bad_layouts(p.name)
    if p.kind == "fixed":
        out += fixed_lengths(p)
    if p.kind in ("out", "outmin", "inout"):
        out += read_only_outputs(p.name)
    if p.kind == "out":
        out += output_sizes(p.name)
    if p.kind == "outmin":
        out += short_outputs(p.name)
    if p.huge is not None and CPYTHON:
        exc, msg = p.huge
        out.append(("huge-2**62-bytes-claimed", lambda v: fake_huge(), exc, msg))
    return out


# ---- cases ------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    api: Api
    label: str
    # Edits a fresh valid call into the bad one: returns (fn, args, kwargs).
    build: Callable[[Valid], tuple[Callable[..., Any], list[Any], dict[str, Any]]]
    exc: Expected
    match: Message

    @property
    def id(self) -> str:
        return f"{self.api.name}-{self.label}"


def split(api: Api, values: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Positional arguments for the positional parameters, keywords for the
    keyword-only ones (the valid call, or one argument replaced)."""
    positional = [values[p.name] for p in api.params if not p.keyword_only and p.name in values]
    keywords = {p.name: values[p.name] for p in api.params if p.keyword_only and p.name in values}
    return positional, keywords


def structure_cases(api: Api) -> list[Case]:
    """Surplus, unknown, duplicate, missing arguments; a wrong `self`."""
    names = [p.name for p in api.params]
    positional_names = [p.name for p in api.params if not p.keyword_only]
    cases: list[Case] = []

    def case(label: str, build: Callable[[Valid], tuple[Callable[..., Any], list[Any], dict[str, Any]]],
             match: str, exc: Expected = TypeError) -> None:
        cases.append(Case(api, label, build, exc, match))

    def surplus(v: Valid) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
        args, kwargs = split(api, v.args)
        return v.fn, [*args, b"surplus"], kwargs

    case("surplus-positional", surplus,
         r"takes (at most \d+ positional arguments?|0 positional arguments but|no arguments)")
    typos = ["associated_date", "aad", "Nonce", "nonce_", "buffer", "out", "keys", "data_", "x"]
    for typo in (t for t in typos if t not in names):
        def unknown(v: Valid, t: str = typo) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
            args, kwargs = split(api, v.args)
            return v.fn, args, {**kwargs, t: b""}

        case(f"unknown-keyword-{typo}", unknown,
             rf"unexpected keyword argument '{typo}'|{api.name.split('.')[-1]}\(\) takes no keyword arguments")
    if "associated_data" in names:
        def misspelt(v: Valid) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
            kwargs = dict(v.args)
            kwargs["associated_date"] = kwargs.pop("associated_data")
            return v.fn, [], kwargs

        case("misspelt-associated_data-instead", misspelt, r"unexpected keyword argument 'associated_date'")
    for name in names:
        # A keyword is its whole name: `associated_data\0x` is not `associated_data`
        # (a C strcmp would stop at the NUL and take it).
        def nul_suffixed(v: Valid, name: str = name) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
            kwargs = dict(v.args)
            kwargs[name + "\0x"] = kwargs.pop(name) if name in kwargs else b""
            return v.fn, [], kwargs

        case(f"nul-suffixed-keyword-{name}", nul_suffixed,
             rf"unexpected keyword argument '{name}(\\x00|\x00)x'|{api.name.split('.')[-1]}\(\) takes no keyword arguments")
    for i, name in enumerate(positional_names):
        def duplicate(v: Valid, i: int = i, name: str = name) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
            positional = [v.args[n] for n in positional_names[: i + 1]]
            kwargs = {n: v.args[n] for n in names[i + 1 :] if n in v.args}
            return v.fn, positional, {**kwargs, name: v.args[name]}

        case(f"duplicate-{name}", duplicate, rf"got multiple values for argument '{name}'")
    for p in api.params:
        if p.keyword_only:
            def as_positional(v: Valid, p: Param = p) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
                values = [v.args[n] for n in positional_names]
                return v.fn, [*values, 1], {}

            case(f"keyword-only-{p.name}-positionally", as_positional, r"takes at most \d+ positional arguments? .*keyword-only")
        if p.required:
            def missing(v: Valid, p: Param = p) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
                return v.fn, [], {n: x for n, x in v.args.items() if n != p.name}

            case(f"missing-{p.name}", missing, rf"missing required argument '{p.name}'")
    if any(p.required for p in api.params):
        first = next(p.name for p in api.params if p.required)
        case("no-arguments", lambda v: (v.fn, [], {}), rf"missing required argument '{first}'")
    if api.method_of is not None:
        cls, method = api.method_of
        for label, wrong_self in (("object", lambda: object()), ("bytes", lambda: KEY),
                                  ("other-type", lambda: cb3.Stream(KEY, NONCE) if cls is cb3.ChaCha20Blake3
                                   else cb3.ChaCha20Blake3(KEY))):
            def unbound(v: Valid, make: Callable[[], Any] = wrong_self) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
                args, kwargs = split(api, v.args)
                return getattr(cls, method), [make(), *args], kwargs

            case(f"wrong-self-{label}", unbound,
                 rf"descriptor '{method}' (for '.*' objects doesn't apply|requires a '.*' object but received)")
    return cases


def value_cases(api: Api) -> list[Case]:
    cases: list[Case] = []
    for p in api.params:
        for label, make, exc, msg in bad_values(p):
            def build(v: Valid, p: Param = p, make: Callable[[Valid], Any] = make) -> tuple[
                    Callable[..., Any], list[Any], dict[str, Any]]:
                v.args[p.name] = make(v)
                args, kwargs = split(api, v.args)
                return v.fn, args, kwargs

            cases.append(Case(api, f"{p.name}-{label}", build, exc, msg))
    return cases


def extra_cases(api: Api) -> list[Case]:
    cases = []
    for label, edit, exc, msg in api.extra:
        def build(v: Valid, edit: Callable[[Valid], None] = edit) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
            edit(v)
            args, kwargs = split(api, v.args)
            return v.fn, args, kwargs

        cases.append(Case(api, label, build, exc, msg))
    return cases


CASES: list[Case] = [c for api in APIS for c in (*value_cases(api), *structure_cases(api), *extra_cases(api))]


# ---- the test -----------------------------------------------------------------


def writable_snapshot(obj: Any) -> bytes | None:
    """The bytes of a writable buffer (None for anything else)."""
    backing = getattr(obj, "_cb3_backing", None)
    if backing is not None:
        return bytes(backing)
    try:
        view = memoryview(obj)
    except (TypeError, ValueError):
        return None
    with view:
        if view.readonly or view.nbytes > 1 << 26:
            return None
        return view.tobytes()


def leaks_key(text: str) -> bool:
    return any(secret in text for key in (KEY, OTHER_KEY) for secret in (key.hex(), key.hex()[:16], repr(key)))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case) -> None:
    valid = case.api.valid()
    fn, args, kwargs = case.build(valid)
    # Every writable buffer the call gets, and the object's state (a Stream's
    # index): a failed call must leave all of them exactly as they were.
    watched = [(obj, writable_snapshot(obj)) for obj in [*args, *kwargs.values()]]
    state = valid.state()
    match = case.match(valid) if callable(case.match) else case.match

    with pytest.raises(case.exc) as info:
        fn(*args, **kwargs)

    error = info.value
    assert type(error) is not SystemError, error  # an internal error is a bug, whatever the case
    assert re.search(match, str(error)), f"{type(error).__name__}: {error!s} does not match {match!r}"
    assert not leaks_key(str(error)) and not leaks_key(repr(error.args)), error
    for obj, before in watched:
        if before is not None:
            assert writable_snapshot(obj) == before, f"a failed call changed its {type(obj).__name__} argument"
    assert valid.state() == state, "a failed call changed the object's state"
    CASE_COUNTS["bad-input matrix"] += 1


@pytest.mark.parametrize("api", APIS, ids=[a.name for a in APIS])
def test_valid_call_succeeds(api: Api) -> None:
    """Each entry's valid call succeeds, so every failure above comes from
    the one thing its case changed."""
    valid = api.valid()
    args, kwargs = split(api, valid.args)
    result = valid.fn(*args, **kwargs)
    if api.name in ("ChaCha20Blake3.decrypt", "ChaCha20Blake3.decrypt_detached", "Stream.decrypt"):
        assert result == PT


class Index:
    """An integer that is not an int, as numpy's integers are."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


#: A valid value for each integer parameter that the valid calls leave out.
INT_VALUES = {"max_threads": 2, "message_index": 3, "counter": 1, "rounds": 12, "length": 40}
INT_PARAMS = [(api, p) for api in APIS for p in api.params if p.kind == "int"]


@pytest.mark.parametrize("spelling", [np.int64, np.uint8, Index], ids=["numpy-int64", "numpy-uint8", "__index__"])
@pytest.mark.parametrize("api,param", INT_PARAMS, ids=[f"{a.name}-{p.name}" for a, p in INT_PARAMS])
def test_integer_spellings(api: Api, param: Param, spelling: Callable[[int], Any]) -> None:
    """Every integer parameter takes any object with __index__, with the
    result of the plain int (the other half of int_errors' policy)."""
    results = []
    for value in (lambda x: x, spelling):
        valid = api.valid()
        valid.args[param.name] = value(valid.args.get(param.name, INT_VALUES.get(param.name, 0)))
        args, kwargs = split(api, valid.args)
        result = valid.fn(*args, **kwargs)
        results.append((result, valid.state()) if isinstance(result, (bytes, int, type(None))) else valid.state())
    assert results[0] == results[1]


@pytest.mark.skipif(not CPYTHON, reason="blake3-py, the reference, is installed on CPython only")
@pytest.mark.parametrize(
    "value", [True, False, np.int64(2), Index(3), -1, -2, 0, 2**63, 2**64, 2**70, 2.0, "2", None],
    ids=repr)
@pytest.mark.parametrize("where", ["max_threads", "length", "seek"])
def test_blake3_integers_follow_blake3_py(where: str, value: Any) -> None:
    """cb3.blake3 is a drop-in for blake3-py, so its integer parameters take
    what blake3-py's take (True, numpy integers, AUTO = -1) and refuse what
    it refuses with the same exception type."""
    import blake3 as blake3_py

    def outcome(module: Any) -> Any:
        try:
            if where == "max_threads":
                return module.blake3(b"abc", max_threads=value).digest()
            return module.blake3(b"abc").digest(**{where: value})
        except Exception as error:  # noqa: BLE001 - the type is the result
            return type(error)

    assert outcome(cb3) == outcome(blake3_py)


def test_matrix_covers_every_public_callable() -> None:
    """A new public function or method without a table entry fails here."""
    covered = {api.name for api in APIS} | COVERED_BY_TEST_HASH | COVERED_BY_TEST_CHUNKED | COVERED_BY_TEST_PASSPHRASE
    public = set()
    names = [(cb3, name) for name in cb3.__all__]
    for module, name in names:
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):  # cb3.chacha20: its own public names too
            names += [(obj, member) for member in obj.__all__]
        elif isinstance(obj, type) and not issubclass(obj, BaseException):
            public.add(obj.__name__)
            public.update(
                f"{obj.__name__}.{member}"
                for member, value in vars(obj).items()
                if not member.startswith("_") and callable(value) and not isinstance(value, staticmethod)
            )
        elif callable(obj) and not isinstance(obj, type):
            public.add(name)
    missing = sorted(public - covered)
    assert not missing, f"no bad-input matrix entry for {missing}"
    assert {"ChaCha20.update", "hchacha20", "blake3.update"} <= public, sorted(public)  # the walk reached them
    assert len(CASES) > 1000, len(CASES)
