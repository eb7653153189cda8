"""The Iceberg promotion rule proven on Iceberg's REST catalog server: a table holding rows written before is
planned with pyiceberg and Iceberg's Java library declared as readers, each promotion the plan makes carries their
verdict (same), the server (Iceberg's Java library) takes the commit, and pyiceberg reads the old rows back with
their values, promoted. The rules without a JVM are tests/test_reader_rules.py."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from schemaflow.apply.executor import apply_plan
from schemaflow.catalog.rest.backend import CAPABILITIES
from schemaflow.catalog.rest.connection import Connection, RestSettings
from schemaflow.catalog.rest.reader import RestReader
from schemaflow.catalog.rest.writer import RestWriter
from schemaflow.model import VERSION_KEY, Catalog, Column, Database, Table
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.readers import Engine, Reader, Same, plan_readers
from schemaflow.spark_version import spark_version
from tests.rest_server import RestCatalogServer

pytestmark = pytest.mark.remote

READERS = (Reader(Engine.ICEBERG_JAVA, "1.10"), Reader(Engine.PYICEBERG, "0.12"))


def _table(namespace: str, *columns: Column) -> Table:
    return Table(namespace, "readings", columns, format="iceberg", data_source=True,
                 properties={"format-version": "2"})


def test_iceberg_readers_read_promoted_columns_as_before(rest_catalog_server: RestCatalogServer,
                                                          rest_namespace: str) -> None:
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog

    connection = Connection(RestSettings(rest_catalog_server.uri), {})
    writer, reader = RestWriter(connection), RestReader(connection)
    ns = rest_namespace
    writer.add_database(Database(ns))
    before = _table(ns, Column("id", "bigint"), Column("n", "int"), Column("x", "float"), Column("d", "decimal(5,2)"))
    writer.commit_iceberg(before, {}, None, True, {VERSION_KEY: "c1"}, [])
    other: Any = RestCatalog("other", uri=rest_catalog_server.uri)
    written = other.load_table((ns, "readings"))
    written.append(pa.Table.from_pylist([{"id": 1, "n": 7, "x": 2.5, "d": Decimal("1.25")}], schema=written.schema().as_arrow()))

    after = _table(ns, Column("id", "bigint"), Column("n", "bigint"), Column("x", "double"),
                   Column("d", "decimal(9,2)"))
    plan = PlanBuilder(Catalog((ns,), {after.key: after}), reader.read((ns,)), readers=READERS,
                       capabilities=CAPABILITIES, catalog="rest").build()
    [step] = [s for s in plan.steps if s.object == after.key]
    assert step.kind == "alter_iceberg_table" and step.blocked is None
    assert {(v.reader, v.what, v.verdict) for v in step.readers} == {
        (r.label, f"type {column} {old} -> {new}", Same()) for r in plan_readers(READERS, spark_version())
        for column, old, new in (("n", "int", "bigint"), ("x", "float", "double"), ("d", "decimal(5,2)", "decimal(9,2)"))}
    apply_plan(plan, writer, capabilities=CAPABILITIES)

    table = other.load_table((ns, "readings"))
    assert [str(f.field_type) for f in table.schema().fields] == ["long", "long", "double", "decimal(9, 2)"]
    rows = table.scan().to_arrow().to_pylist()
    assert [(r["id"], r["n"], r["x"], str(r["d"])) for r in rows] == [(1, 7, 2.5, "1.25")]
