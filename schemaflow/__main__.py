"""``python -m schemaflow``: the same as the ``schemaflow`` command."""
from __future__ import annotations

from schemaflow.cli import run

run()
