"""cb3's exception classes. The extension raises these (see cext/errors.c)."""

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
