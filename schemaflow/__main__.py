"""``python -m schemaflow``: the same as the ``schemaflow`` command."""
from __future__ import annotations

from schemaflow.cli import run

if __name__ == "__main__":  # not when a process fmt starts imports this module again (spawn, forkserver)
    run()
