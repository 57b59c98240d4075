"""cb3: fast, committing authenticated encryption (ChaCha20-BLAKE3).

    import cb3
    key, nonce = cb3.generate_key(), cb3.generate_nonce()
    ct = cb3.ChaCha20Blake3(key).encrypt(nonce, b"data", b"header")
"""

from . import errors  # first: the extension loads its exception classes from it
from ._cb3 import AUTO, GIL_THRESHOLD, HPY_ABI, simd_backend
from .aead import KEY_SIZE, NONCE_SIZE, TAG_SIZE, ChaCha20Blake3, Cipher, generate_key, generate_nonce
from .errors import DecryptionError, InvalidTag
from .stream import Stream

# The C API for other extensions: where cb3.h and libcb3.a are (cb3/capi.py).
from .capi import get_include, get_libraries, get_library_dir, get_link_args

__version__ = "0.1.0"

__all__ = [
    "ChaCha20Blake3",
    "Cipher",
    "Stream",
    "DecryptionError",
    "InvalidTag",
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

__all__ += ["get_include", "get_library_dir", "get_libraries", "get_link_args"]
