"""The same operations in the peers a user would pick instead, so the asv
history shows cb3's ratio to them on the same machine and commit
(bench_throughput.Ratio tracks those ratios directly)."""

import blake3
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from .common import KEY, MESSAGES, NONCE12, SIZES, SOME_SIZES, Lazy

CHACHAPOLY = ChaCha20Poly1305(KEY)
AES = AESGCM(KEY)
OUT = Lazy(bytearray)


class Peers:
    params = [SIZES]
    param_names = ["size"]
    version = "1"

    def time_cryptography_chacha20poly1305_encrypt(self, size: int) -> None:
        CHACHAPOLY.encrypt(NONCE12, MESSAGES[size], None)

    def time_cryptography_aesgcm_encrypt(self, size: int) -> None:
        AES.encrypt(NONCE12, MESSAGES[size], None)


# OpenSSL's ChaCha20 (16-byte nonce: le32 counter || 12-byte nonce); one
# long-lived encryptor, as cb3's ChaCha20 benchmarks use.
CHACHA20 = Cipher(algorithms.ChaCha20(KEY, bytes(4) + NONCE12), mode=None).encryptor()


class PeersPrimitives:
    """The two primitives cb3's AEAD is made of, from the peers."""

    params = [SOME_SIZES]
    param_names = ["size"]
    version = "1"

    def time_blake3py_hash(self, size: int) -> None:
        blake3.blake3(MESSAGES[size]).digest()

    def time_blake3py_keyed_hash(self, size: int) -> None:
        blake3.blake3(MESSAGES[size], key=KEY).digest()

    def time_cryptography_chacha20_update_into(self, size: int) -> None:
        CHACHA20.update_into(MESSAGES[size], OUT[size])
