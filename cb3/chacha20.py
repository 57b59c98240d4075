"""The raw ChaCha stream cipher family: ``ChaCha20`` and ``hchacha20``.

No authentication: for encryption use an AEAD such as ``cb3.ChaCha20Blake3``.
This module is for protocols and file formats that need the bare keystream.

``ChaCha20(key, nonce, *, counter=0, rounds=20)``: the nonce length picks the
variant.

* 8 bytes: the original (DJB) ChaCha, 64-bit block counter (2**64 blocks);
  pyca/cryptography's 16-byte nonce ``counter64 || nonce8`` and
  pycryptodome's 8-byte nonce mean the same cipher.
* 12 bytes: RFC 8439, 32-bit block counter (2**32 blocks, the last one
  included); pyca/cryptography's ``le32(counter) || nonce12``.
* 24 bytes: XChaCha (draft-irtf-cfrg-xchacha): the key becomes
  ``HChaCha(key, nonce[:16])``, the nonce ``b"\\0" * 4 + nonce[16:]``, and it
  continues as RFC 8439 (32-bit counter, as pycryptodome's XChaCha20).

``rounds`` is 20, 12 or 8 (HChaCha uses the same number of rounds, as
libsodium and RustCrypto's ``XChaCha12/8`` do). The counter never wraps: data
that would pass the last block raises ``KeystreamExhaustedError`` (an
OverflowError and a ValueError) and nothing is processed.

Methods: ``update(data) -> bytes``, ``update_into(data, out) -> int``,
``xor_in_place(buf)``, ``seek(position)`` and the ``position`` property, in
keystream bytes counted from block 0 (``counter=c`` starts at ``64 * c``;
``seek`` agrees with pycryptodome's). Objects lock internally and may be
shared between threads; the GIL is released for 2048 bytes or more.

Engine: the Rust core (rustlib/core/src/chacha20/) drives the RustCrypto
``chacha20`` crate 0.10's generic ``ChaChaCore<R8|R12|R20, Ietf>`` and its
``hchacha`` (AVX-512 / AVX2 / SSE2 / NEON backends chosen at run time). The
``chacha20-blake3`` crate, which cb3's AEAD is compatible with, keeps its own
SIMD ChaCha core private, so it cannot serve here. The 8-byte-nonce layout
runs on the same core with the high counter word in the first nonce word,
re-keyed at each 2**32-block boundary; the crate's ``StreamCipherCoreWrapper``
is not used because it withholds the last 32-bit counter value that RFC 8439
allows and has no 64-bit counter for 12 or 8 rounds.
"""

from ._cb3 import ChaCha20, hchacha20
from .errors import KeystreamExhaustedError

__all__ = ["ChaCha20", "hchacha20", "KeystreamExhaustedError", "KEY_SIZE", "NONCE_SIZES", "BLOCK_SIZE"]

#: Key size in bytes.
KEY_SIZE = 32
#: The accepted nonce sizes: 8 (original ChaCha), 12 (RFC 8439), 24 (XChaCha).
NONCE_SIZES = (8, 12, 24)
#: The ChaCha block size in bytes; a block counter step is one block.
BLOCK_SIZE = 64
