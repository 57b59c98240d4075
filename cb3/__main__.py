"""``python -m cb3``: the command line, which lives in cb3/cli/."""

import sys

from cb3.cli import main

if __name__ == "__main__":
    sys.exit(main())
