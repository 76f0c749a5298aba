"""`python -m harness` is the `harness` command, with the same search path.

`python -m` puts the current directory first on `sys.path`; the `harness` script does not. Run from a
downloaded scenario's directory, that entry would let a module shipped beside the file stand in for
one the user trusts by name, so it is dropped (as `python -P` would): modules come from the
installation and PYTHONPATH only, whichever way the harness is started.
"""

import os
import sys

if sys.path and sys.path[0] and not sys.flags.safe_path and os.path.abspath(sys.path[0]) == os.getcwd():
    del sys.path[0]

from harness.cli import main

main()
