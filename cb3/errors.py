"""cb3's exception classes. The extension raises these (see cext/errors.c)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DecryptionError", "InvalidTag", "KeystreamExhaustedError"]


class DecryptionError(Exception):
    """The ciphertext did not authenticate.

    Raised when the tag does not match (wrong key, nonce, associated data or
    tag, or a modified or truncated ciphertext) and when the input is shorter
    than the 32-byte tag. No plaintext is released and output buffers are
    left untouched.
    """


#: The name pyca/cryptography uses, so code written for its AEADs can catch
#: the same exception.
InvalidTag = DecryptionError


class KeystreamExhaustedError(OverflowError, ValueError):
    """A raw ChaCha cipher (cb3.chacha20.ChaCha20) ran out of keystream.

    Raised when processing the data would move the block counter past its
    last value (2**32 blocks with a 12- or 24-byte nonce, 2**64 with an 8-byte
    nonce). The counter never wraps: nothing was processed and the position
    is unchanged. It is both an OverflowError and a ValueError, so code
    written for pycryptodome (MessageTooLongError) or pyca/cryptography
    (ValueError) catches it unchanged.
    """


class ChunkedError(DecryptionError):
    """A file in the chunked format (cb3.DecryptingReader, cb3.decrypt_file)
    did not authenticate.

    Raised for a chunk that fails to verify: wrong key or associated data, a
    modified, reordered, dropped, duplicated or spliced chunk, a modified
    header, data appended after the final chunk. The message says which
    chunk. Nothing of a failing chunk is ever returned. Subclasses:
    ChunkedTruncatedError, ChunkedHeaderError (docs/stream-format.md lists
    which tampering raises what).
    """


class ChunkedTruncatedError(ChunkedError):
    """The chunked input ended before its final chunk: it was cut at a
    chunk boundary (or has no chunk at all), or a writer never sealed it
    (interrupted before close())."""


class ChunkedHeaderError(ChunkedError):
    """The input does not start with a cb3 chunked header: too short, wrong
    magic, an unsupported version or a chunk size out of range."""


__all__ += ["ChunkedError", "ChunkedTruncatedError", "ChunkedHeaderError"]


class WrongPassphrase(DecryptionError):
    """A passphrase header did not open: the passphrase is wrong, or a byte of
    the header (its parameters, salt, wrapped key or tag) was changed. The two
    are indistinguishable by design (the header is the wrap's associated
    data). Nothing was decrypted or written."""

    def __init__(self, message: str = "wrong passphrase, or a modified header") -> None:
        super().__init__(message)


class PassphraseLimitError(ValueError):
    """A passphrase header asks for more than the reader's limits allow: more
    passes (``time_cost``), memory (``memory_cost``, KiB) or lanes
    (``parallelism``). Refused before anything is allocated. ``parameter``,
    ``value`` and ``limit`` say which; the message names the keyword that
    raises the limit (``max_time_cost=``, ``max_memory_cost=``,
    ``max_parallelism=``) for a file you trust.

    The extension raises it with its message (cext/errors.c); the three
    attributes are read back from it. ``PassphraseLimitError(parameter,
    value, limit)`` makes the same message."""

    parameter: str | None
    value: int | None
    limit: int | None

    _MESSAGE = re.compile(r"asks for (?P<parameter>\w+)=(?P<value>\d+)(?: KiB)?, above this reader's limit of "
                          r"(?P<limit>\d+)")

    def __init__(self, *args: Any) -> None:
        if len(args) == 3:
            parameter, value, limit = args
            unit = " KiB" if parameter == "memory_cost" else ""
            args = (f"the passphrase header asks for {parameter}={value}{unit}, above this reader's limit of "
                    f"{limit}{unit}; pass max_{parameter}={value} (or more) to allow it",)
        super().__init__(*args)
        found = self._MESSAGE.search(str(args[0])) if args else None
        self.parameter = found["parameter"] if found else None
        self.value = int(found["value"]) if found else None
        self.limit = int(found["limit"]) if found else None


__all__ += ["WrongPassphrase", "PassphraseLimitError"]
