"""BLAKE3 hashing: ``blake3``, a drop-in for blake3-py's class, and the
one-shot ``hash``, ``keyed_hash`` and ``derive_key``.

The class and functions live in the HPy extension (cext/hash.c), which calls
the Rust core (rustlib/core/src/hash.rs, the ``blake3`` crate with its ``rayon``
and ``mmap`` features)::

    from cb3 import blake3          # for blake3-py's `from blake3 import blake3`
    import cb3.blake3 as blake3     # for blake3-py's `import blake3` (blake3.blake3(...))
    blake3(b"data").hexdigest()
    blake3(key=key).update(b"message").digest()
    blake3(derive_key_context="app 2025-01-01 session keys").update(secret).digest(64)
    blake3(max_threads=blake3.AUTO).update_mmap("big.iso").hexdigest()
    hashlib.file_digest(f, blake3)

Behaviour and exceptions follow blake3-py 1.0: positional-only ``data``,
keyword-only options, ``digest(length=32, *, seek=0)``, ValueError for a
key that is not 32 bytes, TypeError for str input, BufferError for
non-contiguous or non-byte buffers, OverflowError for negative or oversized
lengths, OSError subclasses from ``update_mmap``. Objects lock internally,
so one hasher may be shared between threads; the GIL is released for
inputs (and outputs) of 2048 bytes or more.
"""

import sys

from ._cb3 import AUTO, BLAKE3_PARALLEL_MIN, blake3, derive_key, hash, keyed_hash, version

__all__ = ["blake3", "hash", "keyed_hash", "derive_key", "BLAKE3_PARALLEL_MIN"]

#: The lowercase name of the algorithm, as hashlib objects have it.
blake3.name = "blake3"
#: The default output size in bytes (any length may be requested).
blake3.digest_size = 32
#: The internal block size in bytes.
blake3.block_size = 64
#: The key size in bytes for the keyed mode.
blake3.key_size = 32
#: ``max_threads`` value letting the implementation pick the number of
#: threads (currently one per logical core).
blake3.AUTO = AUTO

# blake3-py users write `from blake3 import blake3` or `import blake3` and
# then `blake3.blake3(...)`. Both spellings port by changing the import:
# `from cb3 import blake3`, or `import cb3.blake3 as blake3`. The attribute
# cb3.blake3 is the class itself, so blake3-py's module-level names are class
# attributes too (blake3.blake3, blake3.AUTO, blake3.__version__), and the
# class is registered as the module cb3.blake3, so that the import statement
# finds it (cb3/blake3.pyi tells type checkers the same). No cb3/blake3.py
# exists: a submodule of that name would be hidden by the class.
blake3.blake3 = blake3
blake3.__version__ = version()
blake3.__all__ = ["AUTO", "blake3", "__version__"]  # the module's names: from cb3.blake3 import *
sys.modules[f"{__package__}.blake3"] = blake3  # type: ignore[assignment]
