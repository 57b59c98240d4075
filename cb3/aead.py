"""ChaCha20-BLAKE3: the AEAD class, key and nonce generation.

The class itself lives in the HPy extension (cext/aead.c), which calls the
Rust core (rustlib/core/src/aead/).
"""

import os

from ._cb3 import KEY_SIZE, NONCE_SIZE, TAG_SIZE, ChaCha20Blake3

__all__ = ["KEY_SIZE", "NONCE_SIZE", "TAG_SIZE", "ChaCha20Blake3", "Cipher", "generate_key", "generate_nonce"]


def generate_key() -> bytes:
    """A new random 32-byte key from the operating system's CSPRNG."""
    return os.urandom(KEY_SIZE)


def generate_nonce() -> bytes:
    """A new random 24-byte nonce from the operating system's CSPRNG.

    24-byte nonces are safe to pick at random: about 2**96 messages per key
    before a collision becomes likely.
    """
    return os.urandom(NONCE_SIZE)


# Class-level conveniences, as pyca/cryptography's AEADs have them
# (declared in _cb3.pyi).
for _name, _value in {
    "KEY_SIZE": KEY_SIZE,
    "NONCE_SIZE": NONCE_SIZE,
    "TAG_SIZE": TAG_SIZE,
    "generate_key": staticmethod(generate_key),
    "generate_nonce": staticmethod(generate_nonce),
}.items():
    setattr(ChaCha20Blake3, _name, _value)

#: Short alias.
Cipher = ChaCha20Blake3
