"""``python -m rmtk`` is the ``rmtk`` command."""

import sys

from .cli import main

sys.exit(main())
