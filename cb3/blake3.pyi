"""blake3-py's module spelling, for type checkers: ``import cb3.blake3 as
blake3``, then ``blake3.blake3(...)``, ``blake3.AUTO`` and
``blake3.__version__``. At run time cb3/hashing.py registers the class
``cb3.blake3`` itself under this module name, and the class carries these
names as class attributes."""

from ._cb3 import AUTO as AUTO, blake3 as blake3

__version__: str

__all__ = ["AUTO", "blake3", "__version__"]
