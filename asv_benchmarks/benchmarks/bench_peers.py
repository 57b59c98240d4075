"""The same operations in the peers a user would pick instead, so the asv
history shows cb3's ratio to them on the same machine and commit."""

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from .common import KEY, MESSAGES, NONCE12, SIZES

CHACHAPOLY = ChaCha20Poly1305(KEY)
AES = AESGCM(KEY)


class Peers:
    params = [SIZES]
    param_names = ["size"]
    version = "1"

    def time_cryptography_chacha20poly1305_encrypt(self, size: int) -> None:
        CHACHAPOLY.encrypt(NONCE12, MESSAGES[size], None)

    def time_cryptography_aesgcm_encrypt(self, size: int) -> None:
        AES.encrypt(NONCE12, MESSAGES[size], None)
