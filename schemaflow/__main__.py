"""``python -m schemaflow``: the same as the ``schemaflow`` command."""
from __future__ import annotations

import sys

from schemaflow.cli import main

sys.exit(main())
