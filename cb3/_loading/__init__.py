"""What loading the compiled extension needs, apart from the library: the
check for an unbuilt source tree (source_tree.py, before the extension is
imported), the check that a binary matches the interpreter (guard.py, run by
the loader stub and the module's exec slot) and the signatures PyPy's HPy
objects lack (signatures.py)."""
