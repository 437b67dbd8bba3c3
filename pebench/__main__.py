"""``python -m pebench`` is the ``pebench`` command."""

import sys

from pebench.cli import main

sys.exit(main())
