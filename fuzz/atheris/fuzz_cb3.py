"""atheris harnesses for cb3's decrypting calls, and differential harnesses
for cb3.blake3 (against blake3-py) and cb3.chacha20 (against pycryptodome)
(noxfile.py's fuzz step runs them all).

    python fuzz/atheris/fuzz_cb3.py TARGET [libFuzzer options] [corpus dirs]
    python fuzz/atheris/fuzz_cb3.py --list

Each input describes one message (key, nonce, associated data, plaintext of
0 B to 70 KB), sealed by tests/reference.py (an implementation that shares
no code with cb3), then what the receiver is given instead: any field may be
bit-flipped, truncated, extended or replaced, and every argument is passed
as a fuzzer-chosen object: bytes, bytearray, memoryview slices, numpy arrays
(1-D, 2-D, int8, read-only), array, mmap, ctypes, or something cb3 must
refuse (str, None, int, a float, a strided view, an int32 array, a released
memoryview, a read-only output).

The oracle is the documented contract (README, "Errors"):
- an argument that is not a C-contiguous buffer of bytes (or None where that
  means empty, or read-only where cb3 writes) is refused with TypeError,
  BufferError or ValueError naming the first such argument;
- otherwise the call succeeds if and only if the reference decrypts the same
  bytes and every length is right, and then returns exactly the reference
  plaintext: a forged message never decrypts, a genuine one always does;
- a failure is one of the documented exceptions that applies, never a crash,
  a SystemError or another type, and leaves every output buffer (and a
  Stream's index) exactly as it was.

Targets are one table (TARGETS): a new API is one more entry. The harness
code is instrumented for coverage; cb3's native code is exercised but not
instrumented (fuzz/cargo/ fuzzes the C ABI with native coverage).
"""

from __future__ import annotations

import array
import collections
import ctypes
import mmap
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))  # reference.py

import atheris  # noqa: E402

with atheris.instrument_imports(include=["cb3"]):
    import cb3  # noqa: E402

import numpy as np  # noqa: E402

import reference  # noqa: E402

# ---- what a fuzzer-chosen argument is, by the documented rules --------------


@dataclass
class Arg:
    """One argument as passed, and what the documented rules make of it."""

    obj: Any
    value: bytes | None  # the bytes cb3 must see, or None if it must refuse the object
    error: type[BaseException] | None = None  # the exception a refusal raises


def documented(obj: Any, *, writable: bool, none_ok: bool) -> tuple[bytes | None, type[BaseException] | None]:
    """What README's rules make of `obj`: (its bytes, None) if cb3 must
    accept it, else (None, the exception type of the refusal)."""
    if obj is None:
        return (b"", None) if none_ok else (None, TypeError)
    if isinstance(obj, str):
        return None, TypeError
    try:
        view = memoryview(obj)
    except TypeError:
        return None, TypeError  # not a buffer
    except ValueError:
        return None, ValueError  # an exporter that refuses (released, closed)
    with view:
        if not view.c_contiguous:
            return None, BufferError
        if writable and view.readonly:
            return None, TypeError
        if view.itemsize != 1 or view.format.lstrip("@=<>!") not in ("B", "b", "c"):
            return None, BufferError
        return view.tobytes(), None


def _released() -> memoryview:
    view = memoryview(b"released")
    view.release()
    return view


def _mmap_of(data: bytes) -> Any:
    if not data:
        return memoryview(mmap.mmap(-1, 1))[:0]
    m = mmap.mmap(-1, len(data))
    m[:] = data
    return m


def _numpy_2d(data: bytes) -> Any:
    arr = np.frombuffer(data, np.uint8).copy()
    return arr.reshape(2, -1) if data and len(data) % 2 == 0 else arr.reshape(1, -1)


#: Ways to pass a byte string, accepted or not (the rules above decide).
REPRESENTATIONS: list[Callable[[bytes], Any]] = [
    bytes,
    bytearray,
    memoryview,
    lambda d: memoryview(bytearray(b"<<" + d + b">>"))[2 : 2 + len(d)],
    lambda d: np.frombuffer(d, np.uint8).copy(),
    lambda d: np.frombuffer(d, np.int8).copy(),
    _numpy_2d,
    lambda d: np.frombuffer(d, np.uint8),  # read-only
    lambda d: array.array("B", d),
    _mmap_of,
    lambda d: (ctypes.c_ubyte * len(d)).from_buffer_copy(d),
    lambda d: (ctypes.c_char * len(d)).from_buffer_copy(d),
    lambda d: memoryview(bytearray(d)).toreadonly(),
    # Refused:
    lambda d: d.decode("latin-1"),  # str
    len,  # int
    lambda d: float(len(d)),
    list,
    lambda d: memoryview(bytearray(d) * 2)[::2],  # strided (contiguous when len <= 1)
    lambda d: np.frombuffer(d * 2, np.uint8).copy().reshape(2, -1).T,  # Fortran-order (ditto)
    lambda d: np.zeros(len(d) // 4 + 1, np.int32),
    lambda d: memoryview(bytearray(d)).cast("?"),
    lambda d: _released(),
    lambda d: None,
]


def present(fdp: atheris.FuzzedDataProvider, data: bytes, *, writable: bool = False, none_ok: bool = False) -> Arg:
    """`data` as a fuzzer-chosen object, with what cb3 must make of it.
    Half of the time plain bytes (a bytearray for outputs)."""
    choice = fdp.ConsumeIntInRange(0, 2 * len(REPRESENTATIONS) - 1)
    if choice < len(REPRESENTATIONS):
        obj = bytearray(data) if writable else bytes(data)
    else:
        obj = REPRESENTATIONS[choice - len(REPRESENTATIONS)](data)
    value, error = documented(obj, writable=writable, none_ok=none_ok)
    return Arg(obj, value, error)


def snapshot(obj: Any) -> bytes | None:
    try:
        with memoryview(obj) as view:
            return None if view.readonly else view.tobytes()
    except (TypeError, ValueError):
        return None


# ---- messages -----------------------------------------------------------------


@dataclass
class Message:
    key: bytes
    nonce: bytes
    aad: bytes
    plaintext: bytes


def draw_message(fdp: atheris.FuzzedDataProvider) -> Message:
    key = fdp.ConsumeBytes(32).ljust(32, b"\0")
    nonce = fdp.ConsumeBytes(24).ljust(24, b"\0")
    aad = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 80))
    size_class = fdp.ConsumeIntInRange(0, 15)
    if size_class < 12:
        plaintext = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 700))  # both sides of the 512-byte cut-off
    else:  # above the GIL threshold, up to 70 KB, from a fuzzed pattern
        pattern = fdp.ConsumeBytes(16) or b"\x5a"
        size = fdp.ConsumeIntInRange(2000, 70_000)
        plaintext = (pattern * (size // len(pattern) + 1))[:size]
    return Message(key, nonce, aad, plaintext)


def tamper(fdp: atheris.FuzzedDataProvider, blob: bytes, *, fixed: bool = False) -> bytes:
    """What the receiver gets instead of `blob`: unchanged 5 times in 8;
    otherwise one bit flipped, a range overwritten, or (unless `fixed`,
    which keeps the length) truncated, extended or replaced. An exhausted
    input means "flip bit 0 of byte 0", so short inputs test forgeries."""
    kind = fdp.ConsumeIntInRange(0, 15)
    if kind >= 6 or not blob and kind <= 2 or fixed and kind >= 3:
        return blob
    if kind <= 1:  # flip one bit
        pos = fdp.ConsumeIntInRange(0, len(blob) - 1)
        return blob[:pos] + bytes([blob[pos] ^ (1 << fdp.ConsumeIntInRange(0, 7))]) + blob[pos + 1 :]
    if kind == 2:  # overwrite a byte range
        start = fdp.ConsumeIntInRange(0, len(blob) - 1)
        chunk = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 8))[: len(blob) - start]
        return blob[:start] + chunk + blob[start + len(chunk) :]
    if kind == 3:  # truncate
        return blob[: fdp.ConsumeIntInRange(0, max(len(blob) - 1, 0))]
    if kind == 4:  # extend
        return blob + (fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 40)) or b"\0")
    return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 100))  # arbitrary bytes


# ---- the oracle -----------------------------------------------------------------

DOCUMENTED = (cb3.DecryptionError, TypeError, ValueError, BufferError)


class Bug(AssertionError):
    pass


OUTCOMES: collections.Counter[str] = collections.Counter()


def tally(outcome: str) -> None:
    """Counts outcomes; prints them at 2**k executions (libFuzzer ends the
    process with exit(), so there is no 'at the end' for Python code)."""
    OUTCOMES[outcome] += 1
    total = sum(OUTCOMES.values())
    if total >= 1024 and total & (total - 1) == 0:
        summary = ", ".join(f"{name} {count}" for name, count in OUTCOMES.most_common())
        print(f"#{total} outcomes: {summary}", file=sys.stderr, flush=True)


def call_and_judge(
    call: Callable[[], Any],
    args: list[tuple[str, Arg]],
    expected: Callable[[dict[str, bytes]], tuple[set[type[BaseException]], Any]],
    check_result: Callable[[Any, Any], None],
    documented: tuple[type[BaseException], ...] = DOCUMENTED,
    state: Callable[[], Any] = lambda: None,
) -> None:
    """Runs `call` and checks it against the contract.

    args: the arguments in the order cb3 reads them. expected(values) gives,
    for arguments cb3 accepts, the set of exceptions that apply (empty: the
    call must succeed) and the value a success must produce."""
    refused = [(name, a) for name, a in args if a.value is None]
    watched = [(name, a.obj, snapshot(a.obj)) for name, a in args]
    before = state()
    if refused:
        applicable: set[type[BaseException]] = {refused[0][1].error}  # type: ignore[arg-type]
        success_value = None
    else:
        applicable, success_value = expected({name: a.value for name, a in args})  # type: ignore[misc]
    try:
        result = call()
    except BaseException as error:  # judged below
        if not isinstance(error, documented) or type(error) is SystemError:
            raise Bug(f"undocumented exception {type(error).__name__}: {error}") from error
        if not applicable:
            raise Bug(f"a valid call failed: {type(error).__name__}: {error}") from error
        if not any(isinstance(error, t) for t in applicable):
            raise Bug(f"{type(error).__name__}: {error} (expected one of {applicable})") from error
        if refused and not str(error).startswith(refused[0][0]):
            raise Bug(f"refusal does not name {refused[0][0]!r}: {error}") from error
        for name, obj, snap in watched:
            if snap is not None and snapshot(obj) != snap:
                raise Bug(f"failed call changed {name}") from error
        if state() != before:
            raise Bug("failed call changed the object's state") from error
        tally("refused" if refused else type(error).__name__)
        return
    if applicable:
        raise Bug(f"call succeeded, expected one of {applicable} (a forged message decrypted?)")
    check_result(result, success_value)
    tally("ok")


def reference_open(key: bytes, nonce: bytes, data: bytes, tag: bytes | None, aad: bytes) -> bytes | None:
    """The reference plaintext, or None if the reference refuses to decrypt."""
    try:
        if tag is None:
            return reference.decrypt(key, nonce, data, aad)
        return reference.decrypt_detached(key, nonce, data, tag, aad)
    except reference.ReferenceDecryptionError:
        return None


def equal(result: Any, expected: Any) -> None:
    if result != expected:
        raise Bug("decrypted bytes differ from the reference plaintext")


# ---- targets ----------------------------------------------------------------------


def _cipher(fdp: atheris.FuzzedDataProvider, m: Message) -> tuple[cb3.ChaCha20Blake3, bytes]:
    """A cipher under the message's key, or a tampered key of the same length."""
    key = tamper(fdp, m.key, fixed=True)
    return cb3.ChaCha20Blake3(key), key


def _combined_opening(
    key: bytes, v: dict[str, bytes], errors: set[type[BaseException]]
) -> tuple[set[type[BaseException]], Any]:
    """What a combined decryption must do: raise `errors` (the rules the
    values break), else what the reference makes of them."""
    if errors:
        return errors, None
    pt = reference_open(key, v["nonce"], v["data"], None, v["associated_data"])
    if pt is None:
        errors.add(cb3.DecryptionError)
    return errors, pt


def target_decrypt(fdp: atheris.FuzzedDataProvider) -> None:
    m = draw_message(fdp)
    sealed = reference.encrypt(m.key, m.nonce, m.plaintext, m.aad)
    cipher, key = _cipher(fdp, m)
    nonce = present(fdp, tamper(fdp, m.nonce))
    data = present(fdp, tamper(fdp, sealed))
    aad = present(fdp, tamper(fdp, m.aad), none_ok=True)

    def expected(v: dict[str, bytes]) -> tuple[set[type[BaseException]], Any]:
        errors: set[type[BaseException]] = set()
        if len(v["data"]) < 32:
            errors.add(cb3.DecryptionError)
        if len(v["nonce"]) != 24:
            errors.add(ValueError)
        return _combined_opening(key, v, errors)

    call_and_judge(
        lambda: cipher.decrypt(nonce.obj, data.obj, aad.obj),
        [("nonce", nonce), ("data", data), ("associated_data", aad)],
        expected,
        equal,
    )


def target_decrypt_into(fdp: atheris.FuzzedDataProvider) -> None:
    m = draw_message(fdp)
    sealed = reference.encrypt(m.key, m.nonce, m.plaintext, m.aad)
    cipher, key = _cipher(fdp, m)
    nonce = present(fdp, tamper(fdp, m.nonce))
    raw = tamper(fdp, sealed)
    data = present(fdp, raw)
    aad = present(fdp, tamper(fdp, m.aad), none_ok=True)
    size = max(len(raw) - 32, 0) + fdp.ConsumeIntInRange(-2, 2) * fdp.ConsumeBool()
    buf = present(fdp, b"\xa5" * max(size, 0), writable=True)
    if fdp.ConsumeIntInRange(0, 7) == 0 and len(raw) >= 32:
        # In place: buf is a view of the start of a bytearray holding data.
        shared = bytearray(raw)
        data = Arg(shared, raw)
        buf = Arg(memoryview(shared)[: len(raw) - 32], raw[: len(raw) - 32])

    def expected(v: dict[str, bytes]) -> tuple[set[type[BaseException]], Any]:
        errors: set[type[BaseException]] = set()
        if len(v["nonce"]) != 24:
            return {ValueError}, None  # Rust checks the nonce first
        if len(v["data"]) < 32:
            return {cb3.DecryptionError}, None  # then the tag's presence, before the output size
        if len(v["buf"]) != len(v["data"]) - 32:
            errors.add(ValueError)
        return _combined_opening(key, v, errors)

    def check(result: Any, pt: bytes) -> None:
        if result != len(pt) or snapshot(buf.obj) != pt:
            raise Bug("decrypt_into wrote something other than the reference plaintext")

    args = [("nonce", nonce), ("data", data), ("associated_data", aad), ("buf", buf)]
    call_and_judge(lambda: cipher.decrypt_into(nonce.obj, data.obj, aad.obj, buf.obj), args, expected, check)


def _detached_opening(key: bytes, ciphertext: str) -> Callable[[dict[str, bytes]], tuple[set[type[BaseException]], Any]]:
    """What a detached decryption must do with the values it was given (the
    ciphertext under the argument name `ciphertext`): ValueError for a bad
    nonce or tag length, else the reference's plaintext or DecryptionError."""

    def expected(v: dict[str, bytes]) -> tuple[set[type[BaseException]], Any]:
        if len(v["nonce"]) != 24 or len(v["tag"]) != 32:
            return {ValueError}, None
        pt = reference_open(key, v["nonce"], v[ciphertext], v["tag"], v["associated_data"])
        return ({cb3.DecryptionError} if pt is None else set()), pt

    return expected


def _judge_detached_opening(
    fdp: atheris.FuzzedDataProvider,
    method: str,
    ciphertext_name: str,
    check_for: Callable[[Arg], Callable[[Any, bytes], None]],
) -> None:
    """Seals a message detached, then opens it with `method` (decrypt_detached
    or decrypt_in_place, which takes the ciphertext as a writable `buf`), each
    argument perhaps tampered with; `check_for(ciphertext)` judges a success."""
    m = draw_message(fdp)
    ct, tag = reference.encrypt_detached(m.key, m.nonce, m.plaintext, m.aad)
    cipher, key = _cipher(fdp, m)
    nonce = present(fdp, tamper(fdp, m.nonce))
    ciphertext = present(fdp, tamper(fdp, ct), writable=ciphertext_name == "buf")
    tag_arg = present(fdp, tamper(fdp, tag))
    aad = present(fdp, tamper(fdp, m.aad), none_ok=True)

    call_and_judge(
        lambda: getattr(cipher, method)(nonce.obj, ciphertext.obj, tag_arg.obj, aad.obj),
        [("nonce", nonce), (ciphertext_name, ciphertext), ("tag", tag_arg), ("associated_data", aad)],
        _detached_opening(key, ciphertext_name),
        check_for(ciphertext),
    )


def target_decrypt_detached(fdp: atheris.FuzzedDataProvider) -> None:
    _judge_detached_opening(fdp, "decrypt_detached", "data", lambda data: equal)


def target_decrypt_in_place(fdp: atheris.FuzzedDataProvider) -> None:
    def check_for(buf: Arg) -> Callable[[Any, bytes], None]:
        def check(result: Any, pt: bytes) -> None:
            if result is not None or snapshot(buf.obj) != pt:
                raise Bug("decrypt_in_place left something other than the reference plaintext")

        return check

    _judge_detached_opening(fdp, "decrypt_in_place", "buf", check_for)


def target_stream_decrypt(fdp: atheris.FuzzedDataProvider) -> None:
    m = draw_message(fdp)
    sent_at = fdp.ConsumeIntInRange(0, 3) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, 2**64 - 2)
    received_at = sent_at if fdp.ConsumeIntInRange(0, 3) else fdp.ConsumeIntInRange(0, 2**64 - 2)
    sealed = reference.encrypt(m.key, reference.stream_nonce(m.nonce, sent_at), m.plaintext, m.aad)
    key = tamper(fdp, m.key, fixed=True)
    nonce = tamper(fdp, m.nonce, fixed=True)
    stream = cb3.Stream(key, nonce, message_index=received_at)
    data = present(fdp, tamper(fdp, sealed))
    aad = present(fdp, tamper(fdp, m.aad), none_ok=True)

    def expected(v: dict[str, bytes]) -> tuple[set[type[BaseException]], Any]:
        if len(v["data"]) < 32:
            return {cb3.DecryptionError}, None
        pt = reference_open(key, reference.stream_nonce(nonce, received_at), v["data"], None, v["associated_data"])
        return ({cb3.DecryptionError} if pt is None else set()), pt

    def check(result: Any, pt: bytes) -> None:
        equal(result, pt)
        if stream.message_index != received_at + 1:
            raise Bug("a successful decrypt did not advance the stream by one")

    call_and_judge(
        lambda: stream.decrypt(data.obj, aad.obj),
        [("data", data), ("associated_data", aad)],
        expected,
        check,
        state=lambda: stream.message_index,
    )


# ---- BLAKE3 and raw ChaCha: differential against independent libraries ----


_CASES = iter(range(1 << 62))


def _case_rng(fdp: atheris.FuzzedDataProvider) -> tuple[Any, str]:
    """A PRNG for one differential case: seeded by the fuzzer's input and the
    execution number (coverage barely grows inputs here, so the input alone
    would repeat); the seed is in every failure message, to replay it."""
    import random

    seed = f"{fdp.ConsumeBytes(16).hex()}:{next(_CASES)}"
    return random.Random(seed), seed


def _outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", run()
    except (ValueError, TypeError, OverflowError) as error:
        return "error", type(error)


@atheris.instrument_func
def target_blake3(fdp: atheris.FuzzedDataProvider) -> None:
    """cb3.blake3 against blake3-py: the three modes, extended output at any
    seek, split updates, 1 / 2 / AUTO threads, bad key lengths. Same bytes,
    or the same exception type. The parameters come from a PRNG seeded by
    the fuzzer's input, so every execution is a different random case even
    where coverage gives the fuzzer nothing to grow."""
    import blake3 as blake3_py

    rng, seed = _case_rng(fdp)
    mode = rng.randrange(3)
    kwargs: dict[str, Any] = {}
    if mode == 1:
        kwargs["key"] = rng.randbytes(rng.choice([32, 32, 32, 31, 33, 0]))
    elif mode == 2:
        kwargs["derive_key_context"] = "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(40)))
    data = rng.randbytes(rng.choice([0, 1, 63, 64, 65, 1023, 1024, 1025, rng.randrange(6000)]))
    split = rng.randrange(len(data) + 1)
    length = rng.choice([0, 1, 32, 64, 65, rng.randrange(300)])
    seek = rng.choice([0, 1, 63, 64, rng.randrange(1 << 40)])
    threads = rng.choice([1, 2, -1])

    def run(module: Any) -> bytes:
        hasher = module.blake3(data[:split], max_threads=threads, **kwargs)
        hasher.update(data[split:])
        copy = hasher.copy()
        assert copy.digest(length, seek=seek) == hasher.digest(length, seek=seek)
        return bytes(hasher.digest(length, seek=seek))

    expected, actual = _outcome(lambda: run(blake3_py)), _outcome(lambda: run(cb3))
    if expected != actual:
        raise AssertionError(f"seed {seed}: blake3 differs from blake3-py: {actual!r} != {expected!r}")
    tally(expected[0])


@atheris.instrument_func
def target_chacha20(fdp: atheris.FuzzedDataProvider) -> None:
    """cb3.chacha20.ChaCha20 against pycryptodome's ChaCha20 / XChaCha20 for
    8-, 12- and 24-byte nonces, any seek, split updates, in place (random
    cases seeded by the fuzzer's input, as for blake3)."""
    from Crypto.Cipher import ChaCha20 as Reference

    from cb3.chacha20 import ChaCha20

    rng, seed = _case_rng(fdp)
    key, nonce = rng.randbytes(32), rng.randbytes(rng.choice([8, 12, 24]))
    data = rng.randbytes(rng.choice([0, 1, 63, 64, 65, 255, 256, 257, rng.randrange(5000)]))
    split = rng.randrange(len(data) + 1)
    position = rng.choice([0, 1, 63, 64, rng.randrange(1 << 20)])
    reference_cipher = Reference.new(key=key, nonce=nonce)
    reference_cipher.seek(position)
    expected = reference_cipher.encrypt(data)
    ours = ChaCha20(key, nonce)
    ours.seek(position)
    actual = ours.update(data[:split]) + ours.update(data[split:])
    if actual != expected or ours.position != position + len(data):
        raise AssertionError(f"seed {seed}: ChaCha20 differs from pycryptodome")
    buf = bytearray(data)
    again = ChaCha20(key, nonce)
    again.seek(position)
    again.xor_in_place(buf)
    if buf != expected:
        raise AssertionError(f"seed {seed}: ChaCha20.xor_in_place differs from update")
    tally("ok")


#: Every harness, by name. A new API is one more entry.
TARGETS: dict[str, Callable[[atheris.FuzzedDataProvider], None]] = {
    "decrypt": target_decrypt,
    "decrypt_into": target_decrypt_into,
    "decrypt_detached": target_decrypt_detached,
    "decrypt_in_place": target_decrypt_in_place,
    "stream_decrypt": target_stream_decrypt,
    "blake3": target_blake3,
    "chacha20": target_chacha20,
}


def main(targets: dict[str, Callable[[atheris.FuzzedDataProvider], None]] = TARGETS) -> None:
    """Runs the target that argv names (fuzz_chunked.py passes its own table)."""
    if len(sys.argv) > 1 and sys.argv[1] == "--list":
        print("\n".join(targets))
        return
    if len(sys.argv) < 2 or sys.argv[1] not in targets:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(targets)}}} [libFuzzer options] [corpus dirs]")
    target = targets[sys.argv.pop(1)]

    def one_input(data: bytes) -> None:
        target(atheris.FuzzedDataProvider(data))

    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
