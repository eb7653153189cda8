"""What the conformance suite needs to know of one backend: how a project reaches a fresh catalog of it, the
environment its commands run with (credentials), the table format it holds, and how another writer changes it."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schemaflow.model import Column


class Harness:
    """A backend under test; subclass it and override what the backend needs. ``name`` is its ``metastore.type``."""

    name: str = ""
    table_format: str = "parquet"  # the format the suite's tables are declared with ("iceberg" where only it is held)

    def metastore(self, root: Path) -> dict[str, Any]:
        """The ``metastore:`` block of a project at ``root`` that reaches a catalog of its own (``type`` included)."""
        return {"type": self.name}

    def environment(self) -> Mapping[str, str]:
        """Variables the commands run with (credentials: never in the project's files)."""
        return {}

    def careless(self, root: Path) -> dict[str, Any] | None:
        """A ``metastore:`` block reaching the same catalog as ``metastore(root)`` with its guard off (a catalog that
        lands a write whatever version it names), which ``check_guards`` must refuse; None: it cannot be had."""
        return None

    def change_outside(self, root: Path, key: str, column: Column) -> None:
        """Add ``column`` to the table ``key`` as another writer would (not through schemaflow)."""
        raise NotImplementedError(f"{type(self).__name__} says no way for another writer to add a column")
