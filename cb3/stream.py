"""Stream: many messages under one key with counter nonces (cext/stream.c,
rustlib/core/src/stream.rs)."""

from ._cb3 import KEY_SIZE, NONCE_SIZE, TAG_SIZE, Stream

__all__ = ["Stream"]

Stream.KEY_SIZE = KEY_SIZE
Stream.NONCE_SIZE = NONCE_SIZE
Stream.TAG_SIZE = TAG_SIZE
