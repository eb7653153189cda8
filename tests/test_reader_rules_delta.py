"""The Delta protocol rule proven through delta-spark and deltalake: a Delta table holding a row is planned with Delta
readers declared, as ``plan`` makes it (the metastore server over Thrift, the log by ``catalog.delta_log``), and
applied through delta-spark 3.3.2 on Spark 3.5.9 (``tests/delta_spark.py``, the engine shared with
tests/test_delta_apply_engine.py): turning column mapping on (with a rename), then type widening (with a widening).
After each, the protocol deltalake (delta-rs) reads from the log is the one the step's event names, and the rows read
through deltalake and through delta-spark are what the verdicts of a reader of their protocol and features say.
The rule's fast tests, and deltalake's reader features, are in tests/test_reader_rules.py."""
from __future__ import annotations

from dataclasses import replace

import pytest
from deltalake import DeltaTable
from deltalake.exceptions import DeltaProtocolError

from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.model import Catalog, Column, Migration, RenameColumn, Table
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.readers import (DELTALAKE, READER_BLOCK, Barrier, Cannot, Differs, Difference, Engine, Reader,
                                     Same)
from tests.delta_spark import DeltaSpark

pytestmark = [pytest.mark.remote, pytest.mark.delta_engine]

DB = "reader_delta"
OLD_READER, MAPPING_READER = Reader(Engine.DELTA, protocol=1), Reader(Engine.DELTA, protocol=2)
# delta-spark 3.3.2 as a reader: protocol 3 with the reader features the table gets here.
DELTA_SPARK = Reader(Engine.DELTA, protocol=3, features=("columnMapping", "typeWidening-preview"))
READERS = (OLD_READER, MAPPING_READER, DELTALAKE, DELTA_SPARK)
TABLE = Table(DB, "readings", (Column("id", "bigint"), Column("n", "tinyint"), Column("name", "string")),
              format="delta", data_source=True)
RENAME = Migration("0001_label", "", (RenameColumn(f"{DB}.readings", "name", "label"),))
MAPPED = replace(TABLE, columns=(*TABLE.columns[:2], Column("label", "string")),
                 properties={"delta.columnMapping.mode": "name"})
WIDENED = replace(MAPPED, columns=(MAPPED.columns[0], Column("n", "int"), MAPPED.columns[2]),
                  properties={**MAPPED.properties, "delta.enableTypeWidening": "true"})


@pytest.fixture(scope="module")
def engine(delta_spark: DeltaSpark) -> DeltaSpark:
    delta_spark.sql(f"CREATE DATABASE {DB}")
    return delta_spark


def _plan(uri: str, table: Table, allow_destructive: bool = False) -> Plan:
    """The plan of ``table``, with the rename migration once the table exists (one there when it is created is done)."""
    live = ThriftReader(uri).read((DB,))
    desired = Catalog(databases=(DB,), objects={table.key: table}, migrations=(RENAME,) if live.objects else ())
    return PlanBuilder(desired, live, release=(3, 5), readers=READERS, allow_destructive=allow_destructive).build()


def _protocol_step(uri: str, table: Table, what: str) -> dict[str, object]:
    """The verdicts of the plan's protocol step on ``what`` it does, by reader; the step blocked unless allowed."""
    steps = _plan(uri, table).steps
    assert [(s.kind, s.blocked) for s in steps] == [("delta_protocol", READER_BLOCK), ("alter_delta_table", None)]
    step = steps[0]
    assert {v.what for v in step.readers} == {what}
    return {v.reader: v.verdict for v in step.readers}


def _apply(engine: DeltaSpark, uri: str, table: Table) -> None:
    plan = _plan(uri, table, allow_destructive=True)
    assert [s.kind for s in plan.steps] == ["delta_protocol", "alter_delta_table"] and not plan.steps[0].blocked
    answer = engine.apply(plan.to_json())
    assert "applied" in answer, answer


def test_the_delta_protocol_rule_matches_deltalake_and_delta_spark(engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    assert "applied" in engine.apply(_plan(uri, TABLE).to_json())
    engine.sql(f"INSERT INTO {DB}.readings VALUES (1, 7, 'one')")
    [detail] = engine.sql(f"DESCRIBE DETAIL {DB}.readings")
    location = detail["location"].removeprefix("file:")

    # Column mapping: reader version 2, no reader feature listed (a reader of 3 is to have it by the version).
    assert _protocol_step(uri, MAPPED, "reader protocol 2, feature columnMapping") == {
        OLD_READER.label: Cannot(Barrier.PROTOCOL, "the table needs reader protocol 2, the reader speaks 1"),
        MAPPING_READER.label: Same(),
        DELTALAKE.label: Differs(Difference.NULLS, "it reads columns by the names in the files, not by the mapping: "
                                                   "a column renamed reads NULL"),
        DELTA_SPARK.label: Same()}
    _apply(engine, uri, MAPPED)
    protocol = DeltaTable(location).protocol()
    assert (protocol.min_reader_version, protocol.reader_features) == (2, None)
    # deltalake reads the rows, the renamed column by the name its files do not have; delta-spark by the mapping.
    assert DeltaTable(location).to_pyarrow_table().to_pylist() == [{"id": 1, "n": 7, "label": None}]
    assert engine.sql(f"SELECT id, n, label FROM {DB}.readings") == [{"id": 1, "n": 7, "label": "one"}]

    # Type widening on Spark 3.5: reader version 3, the preview feature delta-spark 3.3 writes, listed.
    assert _protocol_step(uri, WIDENED, "reader protocol 3, feature typeWidening-preview") == {
        OLD_READER.label: Cannot(Barrier.PROTOCOL, "the table needs reader protocol 3, the reader speaks 1"),
        MAPPING_READER.label: Cannot(Barrier.PROTOCOL, "the table needs reader protocol 3, the reader speaks 2"),
        DELTALAKE.label: Cannot(Barrier.FEATURE, "the table needs the reader feature typeWidening-preview"),
        DELTA_SPARK.label: Same()}
    _apply(engine, uri, WIDENED)
    protocol = DeltaTable(location).protocol()
    assert protocol.min_reader_version == 3
    assert sorted(protocol.reader_features or ()) == ["columnMapping", "typeWidening-preview"]
    with pytest.raises(DeltaProtocolError, match="not yet supported by the deltalake reader"):
        DeltaTable(location).to_pyarrow_table()
    assert engine.sql(f"SELECT id, n, label FROM {DB}.readings") == [{"id": 1, "n": 7, "label": "one"}]
    assert [(row["col_name"], row["data_type"]) for row in engine.sql(f"DESCRIBE TABLE {DB}.readings")][:3] == [
        ("id", "bigint"), ("n", "int"), ("label", "string")]
