"""The raw ChaCha20 stream cipher (cb3.chacha20.ChaCha20) with each nonce
length: 8 bytes (64-bit counter), 12 (RFC 8439), 24 (XChaCha)."""

import cb3

from .common import KEY, MESSAGES, NONCE, SOME_SIZES, Lazy

NONCE_SIZES = [8, 12, 24]
CIPHERS = Lazy(lambda nonce_size: cb3.chacha20.ChaCha20(KEY, NONCE[:nonce_size]))
OUT = Lazy(bytearray)
BUF = Lazy(bytearray)
Exhausted = cb3.KeystreamExhaustedError


class ChaCha20:
    # One long-lived object per nonce length. A 12- or 24-byte nonce gives
    # 256 GiB of keystream: should a very long run reach the end, the call
    # raises before processing anything, and the benchmark seeks back to 0
    # and repeats it (try costs nothing in CPython 3.11 until it raises).
    params = [NONCE_SIZES, SOME_SIZES]
    param_names = ["nonce_size", "size"]
    version = "1"

    def time_update(self, nonce_size: int, size: int) -> None:
        cipher = CIPHERS[nonce_size]
        try:
            cipher.update(MESSAGES[size])
        except Exhausted:
            cipher.seek(0)
            cipher.update(MESSAGES[size])

    def time_update_into(self, nonce_size: int, size: int) -> None:
        cipher = CIPHERS[nonce_size]
        try:
            cipher.update_into(MESSAGES[size], OUT[size])
        except Exhausted:
            cipher.seek(0)
            cipher.update_into(MESSAGES[size], OUT[size])

    def time_xor_in_place(self, nonce_size: int, size: int) -> None:
        cipher = CIPHERS[nonce_size]
        try:
            cipher.xor_in_place(BUF[size])
        except Exhausted:
            cipher.seek(0)
            cipher.xor_in_place(BUF[size])


class ChaCha20New:
    """Construction (the 24-byte nonce adds one HChaCha20) and seek."""

    params = [NONCE_SIZES]
    param_names = ["nonce_size"]
    version = "1"

    def time_new(self, nonce_size: int) -> None:
        cb3.chacha20.ChaCha20(KEY, NONCE[:nonce_size])

    def time_seek(self, nonce_size: int) -> None:
        CIPHERS[nonce_size].seek(1 << 20)


class HChaCha20:
    version = "1"

    def time_hchacha20(self) -> None:
        cb3.chacha20.hchacha20(KEY, NONCE[:16])
