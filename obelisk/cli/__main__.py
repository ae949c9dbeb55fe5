"""``python -m obelisk.cli`` runs the command line (as ``python -m obelisk`` does)."""

import sys

from obelisk.cli import main

sys.exit(main())
