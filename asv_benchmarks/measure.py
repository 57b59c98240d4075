"""The measuring tools of a checkout: `python asv_benchmarks/measure.py
COMMAND ...` (`--help`: the commands; asv_benchmarks/tools/cli.py).

Run as a script, so that this directory (the `tools` package, never a cb3
source tree) is the first entry of sys.path and `import cb3` finds the cb3
the interpreter has installed.
"""

import sys

from tools.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
