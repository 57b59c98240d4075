"""blake3-py's module spelling: ``import cb3.blake3 as blake3``, then
``blake3.blake3(...)``, ``blake3.AUTO`` and ``blake3.__version__``.

``cb3/__init__.py`` imports this module first and then binds the attribute
``cb3.blake3`` to the class itself (cb3/hash.py), which carries these names
as class attributes too; so ``import cb3.blake3 as blake3`` gives the class
at run time, and a type checker sees this module, whose names match it.
"""

from ._cb3 import AUTO, version
from .hash import blake3

__version__: str = version()

__all__ = ["AUTO", "blake3", "__version__"]
