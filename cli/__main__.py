"""``python -m ptxls.cli [COMMAND]``: the same as the ``ptxls`` script."""

import sys

# As server/__main__.py: the folder `python -m` was started in is not an import source.
if sys.path and not sys.flags.safe_path and sys.path[0] in ("", __import__("os").getcwd()):
    del sys.path[0]

from .main import main

sys.exit(main())
