"""The small projects the conformance suite applies: a database with a table (and a view where the backend holds
views), and the evolutions it applies to them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATABASE = "suite"


def write_project(root: Path, metastore: dict[str, Any], table: str, view: str | None = None) -> None:
    """A project at ``root`` whose schemas declare ``table`` (and ``view``) in the suite's database."""
    folder = root / "schemas" / DATABASE
    folder.mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(f"databases: [{DATABASE}]\nmetastore: {json.dumps(metastore)}\n")
    (folder / "orders.yaml").write_text(table)
    if view is None:
        (folder / "totals.yaml").unlink(missing_ok=True)
    else:
        (folder / "totals.yaml").write_text(view)


def orders(table_format: str, *, coupon: bool = False, comment: str = "orders placed", owner: str = "sales") -> str:
    """The suite's table: with ``coupon``, a column more; its comment and a property as given."""
    extra = "  - {name: coupon, type: string, comment: code used}\n" if coupon else ""
    return (f"table: {DATABASE}.orders\nformat: {table_format}\ncomment: {comment}\n"
            f"columns:\n  - {{name: id, type: bigint}}\n  - {{name: amount, type: 'decimal(12,2)'}}\n{extra}"
            f"properties: {{owner: {owner}}}\n")


TOTALS = f"""\
view: {DATABASE}.totals
sql: SELECT id, amount FROM {DATABASE}.orders
columns: [{{name: id}}, {{name: amount}}]
"""
