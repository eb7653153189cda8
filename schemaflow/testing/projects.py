"""The small projects the conformance suite applies: a database with a table (and a view where the backend holds
views), and the evolutions it applies to them. Each project has a database of its own (``new_database``), so the
duties can share one catalog (a server the backend's tests started once)."""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

_NUMBERS = itertools.count(1)


def new_database() -> str:
    """A database name no other project of this run uses (nor of another process)."""
    return f"suite_{os.getpid()}_{next(_NUMBERS)}"


def write_project(root: Path, metastore: dict[str, Any], database: str, table: str, view: str | None = None) -> None:
    """A project at ``root`` whose schemas declare ``table`` (and ``view``) in ``database``."""
    folder = root / "schemas" / database
    folder.mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(f"databases: [{database}]\nmetastore: {json.dumps(metastore)}\n")
    (folder / "orders.yaml").write_text(table)
    if view is None:
        (folder / "totals.yaml").unlink(missing_ok=True)
    else:
        (folder / "totals.yaml").write_text(view)


def orders(database: str, table_format: str, *, coupon: bool = False, comment: str = "orders placed",
           team: str = "sales", amount: str = "decimal(12,2)") -> str:
    """The suite's table: with ``coupon``, a column more; its comment, a property and the type of ``amount`` as
    given."""
    extra = "  - {name: coupon, type: string, comment: code used}\n" if coupon else ""
    return (f"table: {database}.orders\nformat: {table_format}\ncomment: {comment}\n"
            f"columns:\n  - {{name: id, type: bigint}}\n  - {{name: amount, type: '{amount}'}}\n{extra}"
            f"properties: {{team: {team}}}\n")


def totals(database: str, where: str = "") -> str:
    """The suite's view, of its table (with ``where``, of its rows that hold)."""
    sql = f"SELECT id, amount FROM {database}.orders" + (f" WHERE {where}" if where else "")
    return f"view: {database}.totals\nsql: {sql}\ncolumns: [{{name: id}}, {{name: amount}}]\n"
