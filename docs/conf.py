"""Sphinx configuration of cb3's documentation site.

Built by the test command's docs step (noxfile.py) with -W and
nitpicky on: html and doctest (every ```python block of every page runs, the
README's included); that script also checks the built pages' links and
renders pages in headless Chromium. The API reference is
autodoc of the *installed* cb3 (build with the venv that has it); the C API
reference is generated from rustlib/include/cb3.h at build time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "cb3"
author = "the cb3 authors"
copyright = "the cb3 authors"

import cb3  # noqa: E402  (the installed package: autodoc documents what users get)

version = release = cb3.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "cb3_pyblocks",
    "cb3_stubs",
    "cb3_capi",
    "cb3_coverage",
]

root_doc = "index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_inventories"]
nitpicky = True
# The C standard types the header uses: the C domain has no entries for them.
nitpick_ignore = [("c:identifier", name) for name in ("uint8_t", "uint32_t", "uint64_t", "int32_t", "int64_t", "size_t")]

myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autoclass_content = "class"
autodoc_type_aliases = {name: f"cb3.chunked.{name}" for name in ("PathOrReadable", "PathOrWritable")}

# Python's documentation, offline: the inventory of Python 3.11's docs
# (objects.inv, copied from Debian's python3-doc 3.11.2-1; see
# docs/_inventories/README.md) ships with the site, so the build needs no
# network and no system package. CB3_PYTHON_INVENTORY points elsewhere. The
# URL is where the links lead; the file is what resolves them.
PYTHON_INVENTORY = os.environ.get(
    "CB3_PYTHON_INVENTORY", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_inventories", "python-3.11.inv")
)
if not os.path.isfile(PYTHON_INVENTORY):
    raise RuntimeError(f"{PYTHON_INVENTORY} (Python's objects.inv) is missing")
intersphinx_mapping = {"python": ("https://docs.python.org/3", PYTHON_INVENTORY)}
intersphinx_timeout = 1

html_theme = "alabaster"
html_title = f"cb3 {release}"
html_show_sourcelink = False
html_theme_options = {"description": "Fast, committing authenticated encryption for Python", "fixed_sidebar": True,
                      "page_width": "1140px", "body_max_width": "none"}
