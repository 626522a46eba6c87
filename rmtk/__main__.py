"""``python -m rmtk`` is the ``rmtk`` command."""

import sys

from .cli.main import main

sys.exit(main())
