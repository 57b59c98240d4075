"""``python -m cb3.bench ARGS``: the same as ``python -m cb3 bench ARGS``."""

import sys

from . import main

sys.exit(main(sys.argv[1:]))
