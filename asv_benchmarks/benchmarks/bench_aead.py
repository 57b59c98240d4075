"""ChaCha20-BLAKE3 (cb3.ChaCha20Blake3, cb3.Stream): every public operation at
every size. `time_*` is per call; throughput is size / time, or see
bench_throughput (asv treats every number as lower-is-better)."""

import ctypes

import cb3

from .common import CIPHER, KEY, LARGE, MESSAGES, NONCE, SEALED, SIZES, SOME_SIZES, Lazy, MiB

DETACHED = Lazy(lambda size: CIPHER.encrypt_detached(NONCE, MESSAGES[size]))
OUT_ENCRYPT = Lazy(lambda size: bytearray(size + 32))
OUT_DECRYPT = Lazy(bytearray)
IN_PLACE = Lazy(lambda size: bytearray(MESSAGES[size]))
DECRYPT_IN_PLACE = Lazy(bytearray)
AAD = bytes(range(64))


class AEAD:
    params = [SIZES]
    param_names = ["size"]
    version = "1"

    def time_encrypt(self, size: int) -> None:
        CIPHER.encrypt(NONCE, MESSAGES[size])

    def time_decrypt(self, size: int) -> None:
        CIPHER.decrypt(NONCE, SEALED[size])

    def time_encrypt_into(self, size: int) -> None:
        CIPHER.encrypt_into(NONCE, MESSAGES[size], None, OUT_ENCRYPT[size])

    def time_decrypt_into(self, size: int) -> None:
        CIPHER.decrypt_into(NONCE, SEALED[size], None, OUT_DECRYPT[size])

    def time_encrypt_detached(self, size: int) -> None:
        CIPHER.encrypt_detached(NONCE, MESSAGES[size])

    def time_decrypt_detached(self, size: int) -> None:
        ciphertext, tag = DETACHED[size]
        CIPHER.decrypt_detached(NONCE, ciphertext, tag)

    def time_encrypt_in_place(self, size: int) -> None:
        # Encrypting the buffer again and again is valid (ChaCha XOR, new tag).
        CIPHER.encrypt_in_place(NONCE, IN_PLACE[size])

    def time_decrypt_in_place(self, size: int) -> None:
        # A decrypted buffer no longer verifies: each call first copies the
        # ciphertext back in. bench_overhead.Overhead.time_copy_into is that
        # copy alone, to subtract.
        ciphertext, tag = DETACHED[size]
        buf = DECRYPT_IN_PLACE[size]
        buf[:] = ciphertext
        CIPHER.decrypt_in_place(NONCE, buf, tag)


class AEADAssociatedData:
    """64 bytes of associated data (MAC'd, not encrypted)."""

    params = [SOME_SIZES]
    param_names = ["size"]
    version = "1"

    def time_encrypt_aad(self, size: int) -> None:
        CIPHER.encrypt(NONCE, MESSAGES[size], AAD)


class AEADNew:
    """Cipher construction (key copy; no key schedule in ChaCha20-BLAKE3)."""

    version = "1"

    def time_new(self) -> None:
        cb3.ChaCha20Blake3(KEY)

    def time_generate_nonce(self) -> None:
        cb3.generate_nonce()


def _at_line_offset(length: int, offset: int) -> memoryview:
    """`length` writable bytes starting `offset` bytes past a 64-byte line."""
    backing = bytearray(length + 128)
    address = ctypes.addressof(ctypes.c_char.from_buffer(backing))
    start = (-address) % 64 + offset
    return memoryview(backing)[start : start + length]


#: Outputs by (size, offset from a 64-byte line).
OUT_AT_OFFSET = Lazy(lambda key: _at_line_offset(key[0] + 32, key[1]))
RAW_OUT_AT_OFFSET = Lazy(lambda key: _at_line_offset(key[0], key[1]))
RAW = cb3.chacha20.ChaCha20(KEY, NONCE[:8])


class OutputLineOffset:
    """Outputs 0, 4, 16 (where bytearrays start) and 1 byte past a cache line:
    the AVX-512 kernel stores whole lines where the offset is a multiple of
    4 (and, in `encrypt_into`, puts its private copy at the same offset);
    at 1 its stores straddle two lines."""

    params = [[1 * MiB, 16 * MiB], [0, 4, 16, 1]]
    param_names = ["size", "offset"]
    version = "1"

    def time_encrypt_into(self, size: int, offset: int) -> None:
        CIPHER.encrypt_into(NONCE, MESSAGES[size], None, OUT_AT_OFFSET[size, offset])

    def time_chacha20_update_into(self, size: int, offset: int) -> None:
        RAW.update_into(MESSAGES[size], RAW_OUT_AT_OFFSET[size, offset])


def _input_at_line_offset(key: tuple[int, int]) -> memoryview:
    view = _at_line_offset(*key)
    view[:] = MESSAGES[key[0]]
    return view.toreadonly()


INPUT_AT_OFFSET = Lazy(_input_at_line_offset)


class InputLineOffset:
    """Inputs 16 (the output's offset here), 48 (where bytes objects start),
    0 and 17 bytes past a cache line, into an output 16 past one: the
    AVX-512 kernel loads two whole lines per 64 bytes where the input lies a
    whole number of words (but not of lines) past the lines it stores (48, 0),
    one line where it lies on them (16), and straddles two lines at 17."""

    params = [[1 * MiB, 16 * MiB], [16, 48, 0, 17]]
    param_names = ["size", "offset"]
    version = "1"

    def time_encrypt_into(self, size: int, offset: int) -> None:
        CIPHER.encrypt_into(NONCE, INPUT_AT_OFFSET[size, offset], None, OUT_AT_OFFSET[size, 16])

    def time_chacha20_update_into(self, size: int, offset: int) -> None:
        RAW.update_into(INPUT_AT_OFFSET[size, offset], RAW_OUT_AT_OFFSET[size, 16])


THREADED = cb3.ChaCha20Blake3(KEY, max_threads=cb3.AUTO)
THREADED_2 = cb3.ChaCha20Blake3(KEY, max_threads=2)


class Threaded:
    """max_threads=AUTO: messages of 1 MiB and more are split across cores."""

    params = [LARGE]
    param_names = ["size"]
    version = "1"

    def time_encrypt(self, size: int) -> None:
        THREADED.encrypt(NONCE, MESSAGES[size])

    def time_decrypt(self, size: int) -> None:
        THREADED.decrypt(NONCE, SEALED[size])

    def time_encrypt_into(self, size: int) -> None:
        THREADED.encrypt_into(NONCE, MESSAGES[size], None, OUT_ENCRYPT[size])

    def time_decrypt_into(self, size: int) -> None:
        THREADED.decrypt_into(NONCE, SEALED[size], None, OUT_DECRYPT[size])

    def time_encrypt_into_2_threads(self, size: int) -> None:
        THREADED_2.encrypt_into(NONCE, MESSAGES[size], None, OUT_ENCRYPT[size])


# One long-lived stream: 2^64 - 1 messages is more than any benchmark sends.
STREAM = cb3.Stream(KEY, NONCE)


class StreamEncrypt:
    params = [SIZES]
    param_names = ["size"]
    version = "1"

    def time_stream_encrypt(self, size: int) -> None:
        STREAM.encrypt(MESSAGES[size])


# Message 0 of a stream: a Stream's index advances on every successful
# decrypt, so a ciphertext decrypts once per Stream object.
STREAM_SEALED = Lazy(lambda size: cb3.Stream(KEY, NONCE).encrypt(MESSAGES[size]))


class StreamDecrypt:
    params = [SOME_SIZES]
    param_names = ["size"]
    version = "1"

    def time_stream_decrypt(self, size: int) -> None:
        # A new Stream per call (see StreamNew.time_new, to subtract).
        cb3.Stream(KEY, NONCE).decrypt(STREAM_SEALED[size])


class StreamNew:
    version = "1"

    def time_new(self) -> None:
        cb3.Stream(KEY, NONCE)
