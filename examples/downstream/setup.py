"""An example downstream extension that links cb3's C API (see docs/c-api.md).

Build it against the installed cb3 (cb3 must be importable at build time,
hence no build isolation):

    pip install -r requirements-build.txt     # setuptools >= 70.1
    pip install --no-build-isolation .
    # or: python setup.py build_ext --inplace
"""

from setuptools import Extension, setup

import cb3

setup(
    name="cb3-downstream-example",
    version="0.1.0",
    ext_modules=[
        Extension(
            "cb3_downstream",
            ["cb3_downstream.c"],
            include_dirs=[cb3.get_include()],
            library_dirs=[cb3.get_library_dir()],
            libraries=cb3.get_libraries(),
            # --exclude-libs keeps libcb3.a's symbols (and the Rust runtime in
            # it) private to this module instead of exporting them (GNU ld).
            extra_link_args=[*cb3.get_link_args(), "-Wl,--exclude-libs,libcb3.a"],
            extra_compile_args=["-Wall", "-Wextra"],
        )
    ],
)
