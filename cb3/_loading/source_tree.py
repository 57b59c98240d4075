"""The one check `import cb3` makes before it loads the extension: a Python
started in a source checkout imports the checkout's cb3/, which has no
compiled _cb3, and would otherwise fail with a puzzling "partially
initialized module" error.

The check runs before the import rather than in an `except ImportError`
around it: with such a handler, a build refused by the extension's exec slot
(tests/packaging/test_build_guard.py) crashed HPy's hybrid runtime in the collector at
interpreter exit; without one, the refused import ends cleanly as before.
"""

import os


def refuse_unbuilt(package_dir: str) -> None:
    """Raises ImportError, saying what to do, when ``package_dir`` holds no
    compiled extension (no ``_cb3.*`` but the stub file ``_cb3.pyi``)."""
    if any(name.startswith("_cb3.") and name != "_cb3.pyi" for name in os.listdir(package_dir)):
        return
    raise ImportError(
        f"cb3's compiled extension (_cb3) is not in {package_dir}: this is cb3's source tree, not an installed "
        "cb3. Install it (python -m pip install .) and start Python outside the source tree, or with -P "
        "(python -P ...) so that the installed package is imported",
        name="cb3._cb3",
    )
