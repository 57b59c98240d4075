"""ChaCha20-BLAKE3: every public operation at every size. `time_*` per call;
throughput is size / time (asv treats every number as lower-is-better)."""

import cb3

from .common import KEY, MESSAGES, NONCE, SIZES

CIPHER = cb3.ChaCha20Blake3(KEY)
SEALED = {size: CIPHER.encrypt(NONCE, data) for size, data in MESSAGES.items()}
DETACHED = {size: CIPHER.encrypt_detached(NONCE, data) for size, data in MESSAGES.items()}
OUT_ENCRYPT = {size: bytearray(size + 32) for size in SIZES}
OUT_DECRYPT = {size: bytearray(size) for size in SIZES}
IN_PLACE = {size: bytearray(size) for size in SIZES}
# One long-lived stream: 2^64 - 1 messages is more than any benchmark sends.
STREAM = cb3.Stream(KEY, NONCE)


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
        CIPHER.encrypt_in_place(NONCE, IN_PLACE[size])


THREADED = cb3.ChaCha20Blake3(KEY, max_threads=cb3.AUTO)
LARGE = [size for size in SIZES if size >= 1 << 20]


class Threaded:
    """max_threads=AUTO: messages of 1 MiB and more are split across cores."""

    params = [LARGE]
    param_names = ["size"]
    version = "1"

    def time_encrypt(self, size: int) -> None:
        THREADED.encrypt(NONCE, MESSAGES[size])

    def time_decrypt(self, size: int) -> None:
        THREADED.decrypt(NONCE, SEALED[size])


class StreamEncrypt:
    params = [SIZES]
    param_names = ["size"]
    version = "1"

    def time_stream_encrypt(self, size: int) -> None:
        STREAM.encrypt(MESSAGES[size])
