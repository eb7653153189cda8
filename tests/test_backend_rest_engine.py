"""What the Iceberg REST catalog backend writes, as the engine teams query it with reads it: Spark with Iceberg's own
runtime (``tests/iceberg_spark.py``) configured with the REST catalog server (``tests/rest_server.py``) as a catalog of
``type=rest``.

A project (an Iceberg table partitioned by transforms, with a sort order, comments and properties; a view of it) is
applied through the CLI, rows are written by pyiceberg, then a column is renamed (by a migration) and another widened
(int to bigint), comments changed and a column added, and applied again. Spark then reads the table's schema (names,
types, comments), its partitioning, sort order and properties, its rows (the renamed and widened columns keep their
values, the added one reads NULL), writes a row of its own, and reads the view: the view's column names and comments
as declared, and its rows. One engine serves the module.
"""
from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from tests.iceberg_spark import IcebergSpark
from tests.projects import schemaflow
from tests.rest_server import RestCatalogServer

pytestmark = [pytest.mark.remote, pytest.mark.iceberg_engine]

CATALOG = "lake"  # the REST catalog's name in Spark


@pytest.fixture(scope="module")
def engine(rest_catalog_server: RestCatalogServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergSpark]:
    workdir = tmp_path_factory.mktemp("iceberg_engine_rest")
    with IcebergSpark.on_rest_catalog(CATALOG, rest_catalog_server.uri, workdir) as spark:
        yield spark


def _write(project: Path, relative: str, text: str) -> None:
    path = project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _orders(ns: str, columns: str) -> str:
    return (f"table: {ns}.orders\nformat: iceberg\ncomment: what was ordered\ncolumns:\n{columns}"
            "partitioned_by: [day(ts), bucket(4, id)]\nsorted_by: [id DESC NULLS LAST]\n"
            "properties: {format-version: '2', team: sales}\n")


def _apply(project: Path) -> None:
    applied = schemaflow(project, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    again = schemaflow(project, "plan")
    assert again.returncode == 0 and again.stdout.startswith("No changes"), again.stdout + again.stderr


def _columns(engine: IcebergSpark, key: str) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """A table's columns (name, type, comment) and its partitioning, as Spark's DESCRIBE shows them."""
    columns: list[tuple[str, str, str | None]] = []
    partitioning: list[str] = []
    section = ""
    for row in engine.sql(f"DESCRIBE TABLE {key}"):
        name = row["col_name"]
        if name.startswith("#"):
            section = name
        elif not name:
            continue
        elif section == "# Partitioning":
            partitioning.append(row["data_type"])
        elif not section:
            columns.append((name, row["data_type"], row["comment"] or None))
    return columns, partitioning


def test_spark_reads_the_tables_and_view_the_rest_backend_wrote(rest_catalog_server: RestCatalogServer,
                                                                 rest_namespace: str, engine: IcebergSpark,
                                                                 tmp_path: Path) -> None:
    ns, project = rest_namespace, tmp_path / "project"
    _write(project, "schemaflow.yaml",
           f"databases: [{ns}]\nmetastore: {{type: iceberg_rest, uri: '{rest_catalog_server.uri}'}}\n")
    _write(project, f"schemas/{ns}/orders.yaml", _orders(ns, (
        "  - {name: id, type: bigint, comment: the order}\n  - {name: ts, type: timestamp}\n"
        "  - {name: qty, type: int, comment: items}\n  - {name: amount, type: 'decimal(10,2)', comment: in euros}\n")))
    _write(project, f"schemas/{ns}/big_orders.yaml",
           f"view: {ns}.big_orders\ncomment: orders over 10 euros\nsql: SELECT id, amount FROM {ns}.orders "
           "WHERE amount > 10\ncolumns: [{name: id, comment: the big order}, {name: amount}]\n")
    _apply(project)

    from pyiceberg.catalog.rest import RestCatalog
    import pyarrow as pa
    from datetime import datetime

    table = RestCatalog("writer", uri=rest_catalog_server.uri).load_table((ns, "orders"))
    table.append(pa.Table.from_pylist(
        [{"id": 1, "ts": datetime(2026, 1, 2, 3, 4), "qty": 2, "amount": Decimal("12.50")},
         {"id": 2, "ts": datetime(2026, 1, 3, 0, 0), "qty": 5, "amount": Decimal("7.25")}],
        schema=table.schema().as_arrow()))

    # amount renamed to total (a migration: Iceberg keeps the field id, so its values), qty widened to bigint,
    # comments changed, a column added.
    _write(project, "migrations/0001_total.yaml",
           f"description: amount is the total\nchanges:\n  - rename_column: {{table: {ns}.orders, from: amount, "
           "to: total}\n")
    hashed = schemaflow(project, "hash-migrations")
    assert hashed.returncode == 0, hashed.stdout + hashed.stderr
    _write(project, f"schemas/{ns}/orders.yaml", _orders(ns, (
        "  - {name: id, type: bigint, comment: the order id}\n  - {name: ts, type: timestamp, comment: when}\n"
        "  - {name: qty, type: bigint, comment: items}\n  - {name: total, type: 'decimal(10,2)', comment: in euros}\n"
        "  - {name: coupon, type: string, comment: code used}\n")))
    _write(project, f"schemas/{ns}/big_orders.yaml",
           f"view: {ns}.big_orders\ncomment: orders over 10 euros\nsql: SELECT id, total FROM {ns}.orders "
           "WHERE total > 10\ncolumns: [{name: id, comment: the big order}, {name: total, comment: in euros}]\n")
    _apply(project)

    key = f"{CATALOG}.{ns}.orders"
    columns, partitioning = _columns(engine, key)
    assert columns == [("id", "bigint", "the order id"), ("ts", "timestamp", "when"), ("qty", "bigint", "items"),
                       ("total", "decimal(10,2)", "in euros"), ("coupon", "string", "code used")]
    assert partitioning == ["days(ts)", "bucket(4, id)"]
    described = {row["col_name"]: row["data_type"] for row in engine.sql(f"DESCRIBE TABLE EXTENDED {key}")}
    assert described["Comment"] == "what was ordered"
    properties = described["Table Properties"]
    assert "sort-order=id DESC NULLS LAST" in properties and "team=sales" in properties, properties
    assert engine.sql(f"SELECT * FROM {key} ORDER BY id") == [
        {"id": 1, "ts": "2026-01-02 03:04:00", "qty": 2, "total": "12.50", "coupon": None},
        {"id": 2, "ts": "2026-01-03 00:00:00", "qty": 5, "total": "7.25", "coupon": None}]

    engine.sql(f"INSERT INTO {key} VALUES (3, TIMESTAMP '2026-01-04 05:06:00', 9000000000, 99.99, 'spring')")
    assert engine.sql(f"SELECT id, qty, total, coupon FROM {key} WHERE id = 3") == [
        {"id": 3, "qty": 9000000000, "total": "99.99", "coupon": "spring"}]

    view = f"{CATALOG}.{ns}.big_orders"
    # The view's schema as the backend writes it: declared names and comments; types the declaration leaves to the
    # SQL are string, since no engine analyses the SQL on a REST catalog (catalog/rest/writer.py).
    assert _columns(engine, view)[0] == [("id", "string", "the big order"), ("total", "string", "in euros")]
    assert engine.sql(f"SELECT * FROM {view} ORDER BY id") == [{"id": "1", "total": "12.50"},
                                                               {"id": "3", "total": "99.99"}]
