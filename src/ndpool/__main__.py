"""``python -m ndpool`` runs the command line (``ndpool``)."""

import sys

from .cli import main

sys.exit(main())
