"""Snapshots: a live catalog saved as JSON and read back unchanged, with stable bytes, no JVM."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from collections.abc import Callable

import pytest

from schemaflow.catalog.snapshot import load_snapshot, read_snapshot, write_snapshot
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, Column, Table, View

ORDERS = Table(
    "retail", "orders",
    (Column("id", "bigint", "Order id"), Column("amount", "decimal(12,2)"), Column("tags", "map<string,string>")),
    partition_columns=(Column("ds", "string", "Load date"),),
    comment="Order lines", format="orc", external=True, location="file:/data/orders",
    properties={"owner": "sales", "a.b": "ü 'quoted'"},
    managed_keys=("a.b", "owner"), version="0123456789abcdef",
)
CUSTOMERS = Table("retail", "customers", (Column("id", "bigint"),))
DAILY = View(
    "reports", "daily", "SELECT ds, sum(amount) AS total FROM retail.orders GROUP BY ds",
    columns=(Column("ds", "string"), Column("total", "decimal(22,2)", "Sum of amounts")),
    comment="Per day", partitioned_on=("ds",), properties={"team": "bi"},
    reads=("retail.orders",), managed_keys=("team",), version="fedcba9876543210",
)
CATALOG = Catalog(("reports", "retail", "empty"), {o.key: o for o in (ORDERS, DAILY, CUSTOMERS)})


def _live_fields(obj: Table | View) -> tuple:
    """The fields that equality ignores but a snapshot must keep."""
    return obj.managed_keys, obj.version, getattr(obj, "reads", ())


def test_a_catalog_round_trips_exactly(tmp_path: Path) -> None:
    path = tmp_path / "live.json"
    write_snapshot(CATALOG, path)
    back = read_snapshot(path)
    assert back.databases == ("empty", "reports", "retail")
    assert back.objects == CATALOG.objects
    assert list(back.objects) == sorted(CATALOG.objects)
    for key, obj in CATALOG.objects.items():
        assert _live_fields(back.objects[key]) == _live_fields(obj)
        assert type(back.objects[key].columns) is tuple


def test_the_file_is_sorted_indented_and_stable(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_snapshot(CATALOG, first)
    shuffled = Catalog(("retail", "empty", "reports"), dict(reversed(list(CATALOG.objects.items()))))
    write_snapshot(shuffled, second)
    text = first.read_text(encoding="utf-8")
    assert text == second.read_text(encoding="utf-8")
    assert text.endswith("}\n") and '\n  "databases": [' in text
    data = json.loads(text)
    assert list(data) == ["databases", "objects"]
    keys = [o["database"] + "." + o["name"] for o in data["objects"]]
    assert keys == ["reports.daily", "retail.customers", "retail.orders"]
    assert "ü 'quoted'" in text


def test_partition_counts_are_optional(tmp_path: Path) -> None:
    path = tmp_path / "live.json"
    write_snapshot(CATALOG, path, partition_counts={"retail.orders": 3, "a.b": 0})
    snapshot = load_snapshot(path)
    assert snapshot.catalog == read_snapshot(path)
    assert list(snapshot.partition_counts.items()) == [("a.b", 0), ("retail.orders", 3)]
    write_snapshot(CATALOG, path)
    assert load_snapshot(path).partition_counts == {}


def test_an_empty_catalog(tmp_path: Path) -> None:
    path = tmp_path / "live.json"
    write_snapshot(Catalog(), path)
    assert read_snapshot(path) == Catalog()


@pytest.mark.parametrize("content, message", [
    (None, "cannot read the snapshot"),
    ("{not json", "not a schemaflow snapshot"),
    ('{"objects": []}', "not a schemaflow snapshot"),
    ('{"databases": [], "objects": [{"kind": "index"}]}', "not a schemaflow snapshot"),
])
def test_a_bad_file_is_a_clear_error(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "live.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SchemaflowError, match=message):
        read_snapshot(path)


def test_reading_a_snapshot_needs_no_jvm(run_python: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    result = run_python(
        "import sys, schemaflow.catalog, schemaflow.catalog.snapshot; print('pyspark' in sys.modules)"
    )
    assert (result.returncode, result.stdout.strip()) == (0, "False"), result.stderr
