"""cb3: fast, committing authenticated encryption (ChaCha20-BLAKE3).

    import cb3
    key, nonce = cb3.generate_key(), cb3.generate_nonce()
    ct = cb3.ChaCha20Blake3(key).encrypt(nonce, b"data", b"header")

Also BLAKE3 hashing (cb3.blake3, a drop-in for blake3-py; cb3.hash,
cb3.keyed_hash, cb3.derive_key: cb3/hashing.py) and the raw ChaCha ciphers
(cb3.chacha20). Files of any size: cb3/chunked/.

The package by layer: the library at the top (aead, stream, hashing,
chacha20, errors, chunked/, and capi: where the C API's header and library
are); the command line in cli/ (``python -m cb3``, the self-test among its
commands); what loading the extension needs in _loading/.
"""

from . import errors  # first: the extension loads its exception classes from it

from ._loading import source_tree as _source_tree

_source_tree.refuse_unbuilt(__path__[0])  # a Python started in the checkout: say what to do
from . import _cb3
from ._loading import signatures as _signatures

_signatures.install(_cb3)  # before the names below are bound: signatures on every interpreter
from ._cb3 import AUTO, GIL_THRESHOLD, HPY_ABI, simd_backend, version as _library_version
from .aead import KEY_SIZE, NONCE_SIZE, TAG_SIZE, ChaCha20Blake3, Cipher, generate_key, generate_nonce
from .errors import DecryptionError, InvalidTag, KeystreamExhaustedError
from .stream import Stream
from . import chunked
from .chunked import *  # noqa: F403 - cb3.chunked.__all__, below
from . import chacha20  # the submodule cb3.chacha20
from .hashing import blake3, derive_key, hash, keyed_hash

# The C API for other extensions: where cb3.h and libcb3.a are (cb3/capi.py).
from .capi import get_include, get_libraries, get_library_dir, get_link_args

__version__ = _library_version()  # rustlib/Cargo.toml's version, the one place it is written

__all__ = [
    "ChaCha20Blake3",
    "Cipher",
    "Stream",
    "DecryptionError",
    "InvalidTag",
    "KeystreamExhaustedError",
    "blake3",
    "hash",
    "keyed_hash",
    "derive_key",
    "chacha20",
    "generate_key",
    "generate_nonce",
    "KEY_SIZE",
    "NONCE_SIZE",
    "TAG_SIZE",
    "AUTO",
    "GIL_THRESHOLD",
    "HPY_ABI",
    "simd_backend",
    "__version__",
]

# Encrypting data of any size (cb3/chunked/, docs/stream-format.md): the
# writer, the reader, the file helpers, the format's constants and exceptions.
__all__ += chunked.__all__

__all__ += ["get_include", "get_library_dir", "get_libraries", "get_link_args"]
