"""cb3's exception classes. The extension raises these (see cext/errors.c)."""

__all__ = ["DecryptionError", "InvalidTag"]


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
