"""cb3: fast, committing authenticated encryption (ChaCha20-BLAKE3).

    import cb3
    key, nonce = cb3.generate_key(), cb3.generate_nonce()
    ct = cb3.ChaCha20Blake3(key).encrypt(nonce, b"data", b"header")

Also BLAKE3 hashing (cb3.blake3, a drop-in for blake3-py; cb3.hash,
cb3.keyed_hash, cb3.derive_key) and the raw ChaCha ciphers (cb3.chacha20).
Note that cb3.hash is the one-shot function; the module that defines it is
sys.modules["cb3.hash"].
"""

from . import errors  # first: the extension loads its exception classes from it

from . import _source_tree

_source_tree.refuse_unbuilt(__path__[0])  # a Python started in the checkout: say what to do
from . import _cb3
from . import _signatures

_signatures.install(_cb3)  # before the names below are bound: signatures on every interpreter
from ._cb3 import AUTO, GIL_THRESHOLD, HPY_ABI, simd_backend, version as _library_version
from .aead import KEY_SIZE, NONCE_SIZE, TAG_SIZE, ChaCha20Blake3, Cipher, generate_key, generate_nonce
from .errors import (
    DecryptionError,
    InvalidTag,
    KeystreamExhaustedError,
    StreamError,
    StreamHeaderError,
    StreamTruncatedError,
)
from .stream import Stream
from .chunked import (
    STREAM_CHUNK_SIZE,
    STREAM_HEADER_SIZE,
    STREAM_MAX_CHUNK_SIZE,
    STREAM_MIN_CHUNK_SIZE,
    DecryptingReader,
    EncryptingWriter,
    decrypt_file,
    encrypt_file,
)
from . import chacha20  # the submodule cb3.chacha20
from . import blake3 as _blake3_module  # the submodule cb3.blake3 (blake3-py's spelling), imported before:
from .hash import blake3, derive_key, hash, keyed_hash  # binds cb3.hash and cb3.blake3 over their submodules

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

# Encrypting data of any size (cb3/chunked.py, docs/stream-format.md).
__all__ += [
    "EncryptingWriter",
    "DecryptingReader",
    "encrypt_file",
    "decrypt_file",
    "StreamError",
    "StreamTruncatedError",
    "StreamHeaderError",
    "STREAM_CHUNK_SIZE",
    "STREAM_HEADER_SIZE",
    "STREAM_MIN_CHUNK_SIZE",
    "STREAM_MAX_CHUNK_SIZE",
]

__all__ += ["get_include", "get_library_dir", "get_libraries", "get_link_args"]
