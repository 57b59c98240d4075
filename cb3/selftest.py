"""Known-answer tests: the three upstream ChaCha20-BLAKE3 vectors.

From the test suite of the Rust crate chacha20-blake3 (tests/mod.rs), which
stores ciphertext || tag; the same vectors appear in the Go and pure-Ruby
implementations. `python -m cb3` runs them on every start.
"""

from typing import NamedTuple

from .aead import ChaCha20Blake3
from .errors import DecryptionError

__all__ = ["Vector", "VECTORS", "run"]


class Vector(NamedTuple):
    key: bytes
    nonce: bytes
    plaintext: bytes
    associated_data: bytes
    ciphertext: bytes
    tag: bytes


def _vector(key: str, nonce: str, plaintext: str, aad: str, ciphertext: str, tag: str) -> Vector:
    return Vector(*(bytes.fromhex(field) for field in (key, nonce, plaintext, aad, ciphertext, tag)))


VECTORS = [
    _vector(
        "0000000000000000000000000000000000000000000000000000000000000000",
        "000000000000000000000000000000000000000000000000",
        "",
        "",
        "",
        "4fbdd67d41f66924b4304f0fc1eaa87a8e90fc7c5304fe3078f0a1b6e6142c33",
    ),
    _vector(
        "0100000000000000000000000000000000000000000000000000000000000010",
        "100000000000000000000000000000000000000000000001",
        b"ChaCha20".hex(),
        b"BLAKE3".hex(),
        "48fecfaf8d9553bf",
        "e7121700da72362e77e09080ddd55101aaca18cdcf259953923150cb89e1fef2",
    ),
    _vector(
        "3eb02a239a2a66de159b9bb5486ccc10a6f63ddf5862ef076650513372353622",
        "768e9bda14afb5686cc34de26210f9ff6fa1dfadc64ee3f0",
        "b8f60975cd7057a003ac84df00d514624fe40cb7855c50dd6594f59b3a2580e5",
        "c8d69ca92da6c5fd22f1805179fcd36cb7a9d45848fa346ba7118c2f34d23a48",
        "444d593bb2dea9ecde9cd3839d166141de70481340ce30739b3f0f28b059d632",
        "32324ace49e8a19729ac5110a093fba10acaeed93099dea1a9c20463a278c3a7",
    ),
]


def run() -> int:
    """Checks every vector (encrypt, decrypt, and rejection of a flipped tag
    bit); returns the number of vectors, or raises AssertionError."""
    for number, v in enumerate(VECTORS, 1):
        cipher = ChaCha20Blake3(v.key)
        sealed = cipher.encrypt(v.nonce, v.plaintext, v.associated_data)
        if sealed != v.ciphertext + v.tag:
            raise AssertionError(f"vector {number}: encrypt gave {sealed.hex()}")
        if cipher.decrypt(v.nonce, sealed, v.associated_data) != v.plaintext:
            raise AssertionError(f"vector {number}: decrypt did not round-trip")
        forged = sealed[:-1] + bytes([sealed[-1] ^ 1])
        try:
            cipher.decrypt(v.nonce, forged, v.associated_data)
        except DecryptionError:
            pass
        else:
            raise AssertionError(f"vector {number}: a forged tag was accepted")
    return len(VECTORS)
