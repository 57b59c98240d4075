"""cb3.kdf (Argon2id) and the passphrase header's private functions
(cb3._cb3.passphrase_*): known answers, agreement with argon2-cffi, every bad
parameter named, limits refused before allocating, Ctrl-C, the GIL."""

from __future__ import annotations

import os
import platform
import random
import signal
import threading
import time

import pytest

import cb3
from cb3 import _cb3, kdf

argon2 = pytest.importorskip("argon2.low_level", reason="argon2-cffi (tests/requirements.txt) is not installed")

SALT = b"somesaltsomesalt"
KEY = bytes(range(32))
FAST = dict(time_cost=1, memory_cost=64, parallelism=2)
LIMITS = (kdf.MAX_TIME_COST, kdf.MAX_MEMORY_COST, kdf.MAX_PARALLELISM)
FILE, KEY_FILE = 1, 2
# The passphrase exceptions of cb3.errors where it defines them (the
# extension raises these, else the classes they subclass).
WRONG_PASSPHRASE = getattr(cb3.errors, "WrongPassphrase", cb3.DecryptionError)
LIMIT_ERROR = getattr(cb3.errors, "PassphraseLimitError", ValueError)


def reference(secret: bytes, salt: bytes, time_cost: int, memory_cost: int, parallelism: int, hash_len: int) -> bytes:
    return argon2.hash_secret_raw(secret, salt, time_cost=time_cost, memory_cost=memory_cost,
                                  parallelism=parallelism, hash_len=hash_len, type=argon2.Type.ID)


def seal(passphrase: bytes = b"correct horse", purpose: int = FILE, salt: bytes = SALT, **params: int) -> bytes:
    p = {**FAST, **params}
    return _cb3.passphrase_seal(passphrase, KEY, purpose, p["time_cost"], p["memory_cost"], p["parallelism"], salt)


def test_rfc9106_parameters_and_the_c_path_agree_with_argon2_cffi():
    # RFC 9106 section 5.3's vector uses a secret key and associated data,
    # which hash_secret_raw (like argon2-cffi's) does not take: the Rust tests
    # check it (rustlib/core/src/kdf.rs). Here: its password, salt and costs
    # through the C path, against argon2-cffi.
    password, salt = bytes([1]) * 32, bytes([2]) * 16
    assert kdf.hash_secret_raw(password, salt, 3, 32, 4, 32) == reference(password, salt, 3, 32, 4, 32)
    # A fixed answer, computed with argon2-cffi 25.1.0 (see reference()).
    assert kdf.hash_secret_raw(b"password", SALT, 2, 64, 2, 24).hex() == "7fb3f1b1243de01aa67936f6f3213cda7f30266a4deb239b"


def test_random_inputs_match_argon2_cffi():
    rng = random.Random(48)
    for _ in range(25):
        parallelism = rng.choice([1, 1, 2, 3, 4, 8])
        args = (
            rng.randbytes(rng.choice([0, 1, 13, 64, 200])),
            rng.randbytes(rng.randint(16, 64)),
            rng.randint(1, 3),
            rng.randint(8 * parallelism, 8 * parallelism + 300),
            parallelism,
            rng.choice([4, 16, 32, 33, 64, 65, 200]),
        )
        assert kdf.hash_secret_raw(*args) == reference(*args), args


@pytest.mark.parametrize(("memory_cost", "parallelism"), [(2047, 1), (2048, 1), (3001, 3), (8192, 4)])
def test_memory_in_huge_pages_matches_argon2_cffi(memory_cost, parallelism):
    # From 2 MiB on, Linux gets the blocks from an aligned mapping (kdf.rs).
    args = (b"pw", SALT, 1, memory_cost, parallelism, 32)
    assert kdf.hash_secret_raw(*args) == reference(*args)


def test_keywords_and_buffers_as_argon2_cffi_names_them():
    expected = reference(b"pw", SALT, 1, 64, 2, 32)
    assert kdf.hash_secret_raw(secret=b"pw", salt=SALT, time_cost=1, memory_cost=64, parallelism=2,
                               hash_len=32) == expected
    assert kdf.hash_secret_raw(bytearray(b"pw"), memoryview(SALT), 1, 64, 2, 32) == expected
    assert type(kdf.hash_secret_raw(b"pw", SALT, 1, 64, 2, 32)) is bytes


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((b"pw", b"s" * 15, 1, 64, 1, 32), ValueError, "salt must be at least 16 bytes, got 15"),
        ((b"pw", b"s" * 65, 1, 64, 1, 32), ValueError, "salt must be at most 64 bytes, got 65"),
        ((b"pw", SALT, 0, 64, 1, 32), ValueError, "time_cost must be at least 1, got 0"),
        ((b"pw", SALT, 1, 15, 2, 32), ValueError, r"memory_cost must be at least 8 \* parallelism = 16 KiB, got 15"),
        ((b"pw", SALT, 1, 4096, 0, 32), ValueError, "parallelism must be at least 1, got 0"),
        ((b"pw", SALT, 1, 4096, 256, 32), ValueError, "parallelism must be at most 255, got 256"),
        ((b"pw", SALT, 1, 64, 1, 3), ValueError, "hash_len must be at least 4 bytes, got 3"),
        ((b"pw", SALT, -1, 64, 1, 32), ValueError, "time_cost must not be negative"),
        ((b"pw", SALT, 1, 2**32, 1, 32), ValueError, r"memory_cost must be less than 2\*\*32, got 4294967296"),
        ((b"pw", SALT, 1, 64, 1, 2**32), ValueError, "hash_len must be at most 4294967295 bytes"),
        ((b"pw", SALT, True, 64, 1, 32), TypeError, "time_cost must be an int, not 'bool'"),
        ((b"pw", SALT, 1.0, 64, 1, 32), TypeError, "time_cost must be an int, not 'float'"),
        ((b"pw", SALT, 1, "64", 1, 32), TypeError, "memory_cost must be an int, not 'str'"),
        (("pw", SALT, 1, 64, 1, 32), TypeError, "secret"),
        ((b"pw", "s" * 16, 1, 64, 1, 32), TypeError, "salt"),
        ((b"pw", None, 1, 64, 1, 32), TypeError, "salt"),
    ],
)
def test_every_bad_parameter_is_named(args, error, message):
    with pytest.raises(error, match=message):
        kdf.hash_secret_raw(*args)


def test_missing_and_extra_arguments():
    with pytest.raises(TypeError, match="hash_len"):
        kdf.hash_secret_raw(b"pw", SALT, 1, 64, 1)
    with pytest.raises(TypeError):
        kdf.hash_secret_raw(b"pw", SALT, 1, 64, 1, 32, type=2)


def test_unallocatable_memory_is_a_memory_error_not_a_crash():
    started = time.monotonic()
    with pytest.raises(MemoryError, match="memory_cost of 4294967295 KiB"):
        kdf.hash_secret_raw(b"pw", SALT, 1, 2**32 - 1, 1, 32)
    assert time.monotonic() - started < 2


def test_constants():
    assert (kdf.DEFAULT_TIME_COST, kdf.DEFAULT_MEMORY_COST, kdf.DEFAULT_PARALLELISM) == (3, 65536, 4)
    assert (kdf.MAX_TIME_COST, kdf.MAX_MEMORY_COST, kdf.MAX_PARALLELISM) == (10, 2097152, 64)
    assert cb3.kdf is kdf


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals go to the main thread")
@pytest.mark.skipif(platform.python_implementation() == "PyPy",
                    reason="PyPy runs the Python signal handler later than the interrupt check asks for it")
def test_ctrl_c_interrupts_a_long_derivation():
    # About 2 s of work here (80 passes over 64 MiB); SIGINT after 0.3 s.
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            kdf.hash_secret_raw(b"pw", SALT, 80, 65536, 1, 32)
        took = time.monotonic() - started
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert took < 0.3 + 0.5, took
    # The next derivation works (the interrupted one finishes on the pool).
    assert kdf.hash_secret_raw(b"pw", SALT, 1, 64, 1, 32) == reference(b"pw", SALT, 1, 64, 1, 32)


def test_the_gil_is_released_during_a_derivation():
    ticks = 0
    done = threading.Event()

    def derive():
        kdf.hash_secret_raw(b"pw", SALT, 4, 32768, 1, 32)
        done.set()

    worker = threading.Thread(target=derive)
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    assert ticks > 20  # this thread ran all along


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() in a process with threads
def test_a_forked_child_derives():
    expected = kdf.hash_secret_raw(b"pw", SALT, 1, 256, 4, 32)  # builds the pool in the parent
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        signal.alarm(20)
        os._exit(0 if kdf.hash_secret_raw(b"pw", SALT, 1, 256, 4, 32) == expected else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


# ---- the passphrase header (private: the file API wraps it) ----


def test_header_round_trip_and_layout():
    header = seal()
    assert len(header) == 100 == _cb3.passphrase_header_size(header[:20]) == _cb3.passphrase_header_size(header)
    assert header[:10] == b"CB3PASS\x01\x01\x01"
    assert header[10:20] == bytes([0, 0, 0, 1, 0, 0, 0, 64, 2, 16])
    assert header[20:36] == SALT
    key = _cb3.passphrase_open(header, b"correct horse", FILE, *LIMITS)
    # A bytearray (PyPy's forwarders may hand back bytes; the file API makes it a bytearray).
    assert isinstance(key, (bytearray if platform.python_implementation() != "PyPy" else (bytes, bytearray))) and key == KEY
    long_salt = seal(purpose=KEY_FILE, salt=bytes(range(64)))
    assert len(long_salt) == 148 == _cb3.passphrase_header_size(long_salt[:20])
    assert _cb3.passphrase_open(long_salt, b"correct horse", KEY_FILE, *LIMITS) == KEY


def test_header_unwraps_with_independent_implementations():
    # argon2-cffi, then the suite's pure-Python ChaCha20-BLAKE3 (tests/reference.py).
    import reference as construction

    header = seal(passphrase="pässword".encode())
    wrap_key = reference("pässword".encode(), SALT, 1, 64, 2, 32)
    assert construction.decrypt(wrap_key, bytes(24), header[36:], header[:36]) == KEY


def test_wrong_passphrase_and_modified_headers_fail_alike():
    header = seal()
    assert issubclass(WRONG_PASSPHRASE, cb3.DecryptionError)
    with pytest.raises(WRONG_PASSPHRASE, match="wrong passphrase, or a modified header"):
        _cb3.passphrase_open(header, b"correct horsE", FILE, *LIMITS)
    for at, flip in [(13, 2), (17, 1), (18, 3), (20, 1), (35, 1), (36, 1), (67, 1), (68, 1), (99, 1)]:
        changed = bytearray(header)
        changed[at] ^= flip
        with pytest.raises(WRONG_PASSPHRASE, match="wrong passphrase, or a modified header"):
            _cb3.passphrase_open(bytes(changed), b"correct horse", FILE, *LIMITS)


def test_structural_faults_are_named():
    header = seal()

    def fails(changed: bytes, match: str, purpose: int = FILE) -> None:
        with pytest.raises(cb3.ChunkedHeaderError, match=match):
            _cb3.passphrase_open(changed, b"correct horse", purpose, *LIMITS)

    fails(header[:99], "truncated cb3 passphrase header: 99 bytes, expected 100")
    fails(b"CB3STRM" + header[7:], "does not start with b'CB3PASS'")
    fails(header[:7] + b"\x02" + header[8:], "unsupported cb3 passphrase header version 2")
    fails(header, "protects an encrypted file, not a key file", KEY_FILE)
    fails(header[:8] + b"\x07" + header[9:], "unknown purpose 7")
    fails(header[:9] + b"\x02" + header[10:], "unknown KDF 2")
    fails(header[:13] + b"\x00" + header[14:], "time_cost 0 is below the minimum 1")
    with pytest.raises(cb3.ChunkedHeaderError, match="salt 15 is below the minimum 16"):
        _cb3.passphrase_header_size(header[:19] + b"\x0f")
    with pytest.raises(cb3.ChunkedHeaderError, match="truncated"):
        _cb3.passphrase_header_size(header[:19])


def test_limits_are_refused_before_allocating():
    header = bytearray(seal())
    header[14:18] = (2**32 - 1).to_bytes(4, "big")  # 4 TiB
    started = time.monotonic()
    with pytest.raises(LIMIT_ERROR, match=r"memory_cost=4294967295 KiB, above this reader's limit of 2097152 KiB; "
                                         r"pass max_memory_cost=4294967295"):
        _cb3.passphrase_open(bytes(header), b"correct horse", FILE, *LIMITS)
    assert time.monotonic() - started < 0.05
    slow = bytearray(seal())
    slow[10:14] = (11).to_bytes(4, "big")
    with pytest.raises(LIMIT_ERROR, match="time_cost=11, above this reader's limit of 10; pass max_time_cost=11"):
        _cb3.passphrase_open(bytes(slow), b"correct horse", FILE, *LIMITS)
    with pytest.raises(LIMIT_ERROR, match="parallelism=2, above this reader's limit of 1; pass max_parallelism=2"):
        _cb3.passphrase_open(seal(), b"correct horse", FILE, 10, 64, 1)
    # A raised limit lets the header through to the tag check.
    with pytest.raises(WRONG_PASSPHRASE):
        _cb3.passphrase_open(bytes(slow), b"correct horse", FILE, 11, 64, 2)


def test_seal_refuses_bad_arguments():
    with pytest.raises(ValueError, match="passphrase must not be empty"):
        seal(passphrase=b"")
    with pytest.raises(ValueError, match="key must be 32 bytes, got 31"):
        _cb3.passphrase_seal(b"pw", KEY[:31], FILE, 1, 64, 1, SALT)
    with pytest.raises(ValueError, match="salt must be at least 16 bytes, got 8"):
        seal(salt=SALT[:8])
    with pytest.raises(ValueError, match="time_cost must be at least 1, got 0"):
        seal(time_cost=0)
    with pytest.raises(ValueError, match=r"purpose must be 1 \(an encrypted file\) or 2 \(a key file\), got 3"):
        seal(purpose=3)
    with pytest.raises(ValueError, match="purpose must be 1"):
        _cb3.passphrase_open(seal(), b"correct horse", 0, *LIMITS)
    with pytest.raises(ValueError, match="passphrase must not be empty"):
        _cb3.passphrase_open(seal(), b"", FILE, *LIMITS)


@pytest.mark.skipif(not hasattr(__import__("sys"), "getrefcount"), reason="needs sys.getrefcount")
def test_calls_and_failures_leave_argument_refcounts_unchanged():
    import sys

    secret, salt, header, passphrase = bytearray(b"pw"), bytearray(SALT), seal(), b"correct horse"
    objects = [secret, salt, header, passphrase, KEY]
    before = [sys.getrefcount(o) for o in objects]
    for _ in range(50):
        kdf.hash_secret_raw(secret, salt, 1, 8, 1, 32)
        _cb3.passphrase_open(header, passphrase, FILE, *LIMITS)
        _cb3.passphrase_seal(passphrase, KEY, FILE, 1, 64, 1, salt)
        for bad in (lambda: kdf.hash_secret_raw(secret, salt[:8], 1, 8, 1, 32),
                    lambda: _cb3.passphrase_open(header, b"wrong", FILE, *LIMITS),
                    lambda: _cb3.passphrase_open(header, passphrase, FILE, 0, 64, 2),
                    lambda: _cb3.passphrase_header_size(header[:5])):
            with pytest.raises((ValueError, cb3.DecryptionError, LIMIT_ERROR)):
                bad()
    assert [sys.getrefcount(o) for o in objects] == before
