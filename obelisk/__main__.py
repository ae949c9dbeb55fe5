"""``python -m obelisk`` runs the command line."""

import sys

from obelisk.cli import main

sys.exit(main())
