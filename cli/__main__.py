"""``python -m ptxls.cli [COMMAND]``: the same as the ``ptxls`` script."""

import sys

from .main import main

sys.exit(main())
