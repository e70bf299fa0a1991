"""``python -m ptxls.server [COMMAND]`` — the same as the ``ptxls`` script."""

import sys

from .cli import main

sys.exit(main())
