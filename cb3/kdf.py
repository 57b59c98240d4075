"""Argon2id (RFC 9106), the key-derivation function behind cb3's
passphrases, named as argon2-cffi names it::

    from cb3 import kdf
    key = kdf.hash_secret_raw(b"passphrase", salt, time_cost=3, memory_cost=65536,
                              parallelism=4, hash_len=32)

``hash_secret_raw`` gives the same bytes as argon2-cffi's
``argon2.low_level.hash_secret_raw(..., type=Type.ID)`` (Argon2 version 0x13,
no secret key, no associated data). It runs in the Rust core (the ``argon2``
crate): the GIL is released, the lanes run on threads, Ctrl-C interrupts it
within a fraction of a second (KeyboardInterrupt), and the memory blocks and
private copies are zeroed before they are freed.

Parameters are checked, never clamped (ValueError naming the argument):
``salt`` 16 to 64 bytes, ``time_cost >= 1``, ``parallelism`` 1 to 255,
``memory_cost`` (KiB) at least ``8 * parallelism``, ``hash_len >= 4``.

The constants: the parameters cb3 encrypts with unless stronger ones are
asked for (RFC 9106's second recommended option, the same on every machine),
and the largest ones a reader accepts from a passphrase header by default
(each can be raised by the caller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, SupportsIndex

from . import _cb3

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "hash_secret_raw",
    "DEFAULT_TIME_COST",
    "DEFAULT_MEMORY_COST",
    "DEFAULT_PARALLELISM",
    "DEFAULT_HASH_LEN",
    "SALT_LEN",
    "MAX_TIME_COST",
    "MAX_MEMORY_COST",
    "MAX_PARALLELISM",
]

#: Passes cb3 encrypts with (RFC 9106's second recommended option).
DEFAULT_TIME_COST = 3
#: Memory cb3 encrypts with, in KiB (64 MiB).
DEFAULT_MEMORY_COST = 65536
#: Lanes cb3 encrypts with.
DEFAULT_PARALLELISM = 4
#: The key length cb3 derives.
DEFAULT_HASH_LEN = 32
#: The salt length cb3 writes (random bytes).
SALT_LEN = 16
#: A reader's default limit on a header's passes.
MAX_TIME_COST = 10
#: A reader's default limit on a header's memory, in KiB (2 GiB).
MAX_MEMORY_COST = 2097152
#: A reader's default limit on a header's lanes.
MAX_PARALLELISM = 64


def hash_secret_raw(
    secret: Buffer,
    salt: Buffer,
    time_cost: SupportsIndex,
    memory_cost: SupportsIndex,
    parallelism: SupportsIndex,
    hash_len: SupportsIndex,
) -> bytes:
    """Argon2id of ``secret`` and ``salt``: ``hash_len`` bytes from
    ``time_cost`` passes over ``memory_cost`` KiB in ``parallelism`` lanes
    (argon2-cffi's ``hash_secret_raw`` with ``type=Type.ID``; every argument
    may be passed by keyword, as there). Raises ValueError naming a parameter
    out of range, TypeError for a wrong type, MemoryError if the memory
    cannot be allocated, KeyboardInterrupt on Ctrl-C."""
    return _cb3.argon2id(secret, salt, time_cost, memory_cost, parallelism, hash_len)
