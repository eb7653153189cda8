"""A table kind with metadata of its own, written as docs/contributing.md says, under tests/ alone: ``ledger`` is a
made-up Spark data source that keeps its schema in a file of its own in the table's folder (as Delta keeps its in
its log), and whose metastore entry holds placeholder columns, as Spark registers such a table. What it proves: the
kind's record says its live schema is its own metadata's, the reader registered for it recognises and reads its
live tables, and a plan compares the declared columns with that metadata's, not with the metastore's column list
(else it would propose re-adding every column); a registered kind without a reader fails every read instead."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from schemaflow.catalog import metadata_readers
from schemaflow.catalog.metadata_readers import MetadataReader, register_metadata_reader
from schemaflow.catalog.hive.spark_schema import SPARK_SCHEMA
from schemaflow.catalog.hive.thrift_data import read_catalog, user_properties
from schemaflow.model import Catalog, Column, Database, DeltaState, IcebergState, PartitionField, Table, recorded
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.scope import unmanageable
from schemaflow.sql import table_kinds
from schemaflow.sql.storage import PATH_OPTION
from schemaflow.sql.table_kinds import (DELTA, ICEBERG, PROVIDER, ColumnChanges, LiveSchema, Resolution, TableKind,
                                        data_source_provider, kind_of, register)

LEDGER = "ledger"
SCHEMA_FILE = "_ledger_schema.json"  # in the table's folder: the ledger's own metadata
KIND = TableKind(LEDGER, True, f"USING {LEDGER}", None, None, Resolution.NOT_ASSUMED, ColumnChanges.SPARK_SQL,
                 LiveSchema.OWN_METADATA)
COLUMNS = (Column("id", "bigint"), Column("amount", "decimal(18,2)"), Column("at", "timestamp"))


def recognises(parameters: Mapping[str, str]) -> bool:
    """A ledger table is registered as a Spark data-source table of its provider."""
    return data_source_provider(parameters.get(PROVIDER)) == LEDGER


def read(data: Mapping[str, Any], storage: Sequence[str | None]) -> Table:
    """A ledger table, its columns from the schema file in its folder (the ``path`` option)."""
    folder = Path(data["sd"]["serdeInfo"]["parameters"][PATH_OPTION])
    fields = json.loads((folder / SCHEMA_FILE).read_text())["fields"]
    parameters = data["parameters"]
    return Table(data["dbName"], data["tableName"], tuple(Column(f["name"], f["type"]) for f in fields),
                 format=LEDGER, data_source=True, properties=user_properties(parameters), **recorded(parameters))


@dataclass
class Metastore:
    """A ``LiveSource`` holding one ledger table, as Spark registers one: placeholder columns in the metastore, and
    an empty copy of the schema of Spark's."""

    folder: Path

    def databases(self) -> tuple[str, ...]:
        return ("shop",)

    def database(self, name: str) -> Database:
        return Database(name)

    def table_data(self, database: str) -> Iterable[dict[str, Any]]:
        return [{"dbName": "shop", "tableName": "payments", "tableType": "MANAGED_TABLE",
                 "sd": {"cols": [{"name": "col", "type": "array<string>", "comment": "from deserializer"}],
                        "serdeInfo": {"parameters": {PATH_OPTION: str(self.folder)}}},
                 "parameters": {PROVIDER: LEDGER, SPARK_SCHEMA: '{"type":"struct","fields":[]}', "team": "payments"}}]


@pytest.fixture
def metastore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Metastore:
    """The ledger kind and its reader registered for one test, and a live ledger table whose schema file says
    ``COLUMNS``."""
    monkeypatch.setattr(table_kinds, "_KINDS", dict(table_kinds._KINDS))
    monkeypatch.setattr(metadata_readers, "_READERS", dict(metadata_readers._READERS))
    register(KIND)
    register_metadata_reader(LEDGER, MetadataReader(recognises, read))
    (tmp_path / SCHEMA_FILE).write_text(json.dumps({"fields": [{"name": c.name, "type": c.type} for c in COLUMNS]}))
    return Metastore(tmp_path)


def declared(columns: tuple[Column, ...] = COLUMNS) -> Catalog:
    table = Table("shop", "payments", columns, format=LEDGER, data_source=True, properties={"team": "payments"})
    return Catalog(("shop",), {table.key: table})


def plan(live: Metastore, columns: tuple[Column, ...] = COLUMNS) -> Plan:
    return PlanBuilder(declared(columns), read_catalog(live, ("shop",))).build()


def test_a_live_table_of_the_kind_is_read_from_its_own_metadata(metastore: Metastore) -> None:
    [table] = read_catalog(metastore, ("shop",)).tables()
    assert kind_of(table) is KIND and KIND.own_metadata
    assert table.columns == COLUMNS  # not the metastore's placeholder, nor Spark's empty copy
    assert table.properties == {"team": "payments"}


def test_a_plan_compares_the_declared_columns_with_its_own_metadatas(metastore: Metastore) -> None:
    assert not [s for s in plan(metastore).steps if s.object == "shop.payments"]
    added = (*COLUMNS, Column("note", "string"))
    [step] = [s for s in plan(metastore, added).steps if s.object == "shop.payments"]
    assert (step.kind, step.summary, step.blocked) == (
        StepKind.ADD_COLUMNS, "add 1 column to shop.payments: note string", None)


def test_read_as_spark_keeps_it_a_plan_would_add_every_column(metastore: Metastore,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The failure the trait prevents: the same kind, its live schema said to be Spark's copy."""
    monkeypatch.setattr(table_kinds, "_KINDS", {**table_kinds._KINDS, (True, LEDGER): replace(
        KIND, live_schema=LiveSchema.SPARK_COPY)})
    [step] = [s for s in plan(metastore).steps if s.object == "shop.payments"]
    assert (step.kind, step.summary) == (
        StepKind.ADD_COLUMNS, "add 3 columns to shop.payments: id bigint, amount decimal(18,2), at timestamp")


def test_a_kind_with_its_own_metadata_and_no_reader_fails_every_read(metastore: Metastore,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata_readers, "_READERS", {k: v for k, v in metadata_readers._READERS.items()
                                                        if k != LEDGER})
    with pytest.raises(LookupError, match="'ledger' keeps its live schema in metadata of its own, and no reader"):
        read_catalog(metastore, ("shop",))


def test_a_new_table_of_the_kind_is_created_as_its_kind_creates_it(metastore: Metastore) -> None:
    """Its record's traits say how: a data source whose columns Spark SQL changes is created by Spark SQL, not by a
    commit of another table format's (the way a kind with metadata of its own was once always created)."""
    table = Table("shop", "refunds", COLUMNS, format=LEDGER, data_source=True)
    [step] = PlanBuilder(Catalog(("shop",), {table.key: table}), Catalog(("shop",), {})).build().steps
    assert (step.kind, step.summary) == (StepKind.CREATE_TABLE, "create table shop.refunds (3 columns, USING ledger)")
    assert "USING ledger" in step.body[0].describe().splitlines()


def test_an_undeclared_live_table_of_the_kind_is_left_alone_unless_the_project_opts_in(metastore: Metastore) -> None:
    [table] = read_catalog(metastore, ("shop",)).tables()
    assert unmanageable(table) == ("a table of the kind 'ledger', whose tables no file declares schemaflow leaves "
                                   "alone unless schemaflow.yaml lists it in manage_undeclared")
    assert unmanageable(table, frozenset({LEDGER})) is None


@pytest.mark.parametrize("like", [DELTA, ICEBERG])
def test_a_kind_registered_with_a_table_formats_traits_is_created_changed_and_laid_out_through_them(
        like: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 59 item 5: how a table is created, how its layout is compared and how it commits are its kind's traits,
    not its name: a kind registered from outside with Delta's traits is created, altered and re-partitioned as a Delta
    table is (the engine's commits, a rewrite for other partition columns); one with Iceberg's changes its partition
    spec by a commit to its own metadata."""
    monkeypatch.setattr(table_kinds, "_KINDS", dict(table_kinds._KINDS))
    name = f"outside_{like}"
    register(replace(kind_of(Table("k", "t", (), format=like, data_source=True)), name=name,
                     ddl_clause=f"USING {name}"))
    columns = (Column("id", "bigint"), Column("ds", "string"), Column("v", "int"))
    state = (dict(delta=DeltaState("/lake/shop/t", 3, "table-id", 1, 2)) if like == DELTA else
             dict(iceberg=IcebergState("uuid", 0, 0, 0, 2, "/lake/shop/t/metadata/v1.metadata.json"),
                  properties={"format-version": "2"}))
    live = Table("shop", "t", columns, format=name, data_source=True, version="v1", **state)
    declared = replace(live, delta=None, iceberg=None, version=None)

    def steps(want: Table, have: Table | None = live) -> list[tuple[str, str]]:
        built = PlanBuilder(Catalog(("shop",), {want.key: want}),
                            Catalog(("shop",), {have.key: have} if have else {}), release=(3, 5),
                            allow_destructive=True).build()
        return [(step.kind, step.summary) for step in built.steps]

    added = replace(declared, columns=(*columns, Column("n", "string")))
    if like == DELTA:
        assert steps(declared, None) == [(StepKind.CREATE_TABLE, "create Delta table shop.t (3 columns)")]
        assert steps(added) == [(StepKind.ALTER_DELTA_TABLE, "alter Delta table shop.t: add n string")]
        assert steps(replace(declared, columns=(columns[0], columns[2]), partition_columns=(columns[1],))) == [
            (StepKind.REWRITE_TABLE, "rewrite table shop.t: partition columns () -> (ds)")]
    else:
        assert steps(declared, None) == [(StepKind.CREATE_TABLE, "create Iceberg table shop.t (3 columns)")]
        assert steps(added) == [(StepKind.ALTER_ICEBERG_TABLE, "alter Iceberg table shop.t: add n string")]
        assert steps(replace(declared, partition_spec=(PartitionField("identity", "ds"),))) == [
            (StepKind.ALTER_ICEBERG_TABLE, "alter Iceberg table shop.t: partition spec (none) -> (ds)")]
