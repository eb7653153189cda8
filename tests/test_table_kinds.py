"""The table-kind registry agrees with the JSON Schema, and each kind's traits agree with each other."""
from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path

import pytest

from schemaflow.catalog.metadata_readers import metadata_reader
from schemaflow.catalog.hive.thrift_data import to_model
from schemaflow.scope import unmanageable
from schemaflow.model import Column, DeltaState, Table
from schemaflow.sql import ddl
from schemaflow.sql.storage import KNOWN_SERDES
from schemaflow.sql.table_kinds import (CUSTOM, FOREIGN_FORMATS, PROVIDER, ColumnChanges, Layout, LiveSchema, Resolution,
                                        TableKind,
                                        data_source_provider, format_kind, hive_kind, kind_of, kinds, names, register,
                                        table_formats, table_kind)

TABLE_SCHEMA = json.loads(files("schemaflow.spec.schemas").joinpath("table.json").read_text())["properties"]
KINDS = kinds()


def test_the_table_schema_enums_are_the_registered_names():
    # format: names the Hive formats and the table formats with metadata of their own (Iceberg, created USING)
    assert set(TABLE_SCHEMA["format"]["enum"]) == set(names(data_source=False)) | set(table_formats())
    assert set(TABLE_SCHEMA["using"]["enum"]) == set(names(data_source=True))
    assert table_formats() == ("iceberg", "delta")
    assert all(format_kind(name).own_metadata and format_kind(name).data_source for name in table_formats())
    assert not set(table_formats()) & (set(names(data_source=False)) | set(names(data_source=True)))


def test_each_name_is_registered_once_per_vocabulary():
    assert len({(kind.data_source, kind.name) for kind in KINDS}) == len(KINDS)
    with pytest.raises(ValueError, match="registered already"):
        register(KINDS[0])


def _live(kind: TableKind, output_format: str | None = None) -> dict:
    """The Thrift data of a live table of ``kind``, as the metastore holds one Spark created."""
    sd: dict = {"cols": [{"name": "a", "type": "string"}]}
    if kind.data_source:
        return {"dbName": "db", "tableName": "t", "sd": sd, "parameters": {PROVIDER: kind.name.upper()}}
    read, write = kind.classes or ("com.example.In", "com.example.Out")
    sd |= {"inputFormat": read, "outputFormat": output_format or write, "serdeInfo": {"serializationLib": kind.serde}}
    return {"dbName": "db", "tableName": "t", "sd": sd, "parameters": {}}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{'using' if k.data_source else 'format'}:{k.name}")
def test_a_live_table_of_each_kind_is_recognised_as_that_kind(kind: TableKind):
    for output_format in (None, *kind.other_output_formats):
        table = to_model(_live(kind, output_format))
        assert isinstance(table, Table)
        assert kind_of(table) is kind
        assert table.serde is None  # the kind's own SerDe is no SerDe of the table's own


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{'using' if k.data_source else 'format'}:{k.name}")
def test_each_kinds_traits_agree(kind: TableKind):
    assert table_kind(kind.name, kind.data_source) is kind
    if kind.data_source:
        assert data_source_provider(kind.name) == kind.name
        assert (kind.ddl_clause, kind.classes, kind.serde) == (f"USING {kind.name}", None, None)
        if kind.own_metadata:  # a table format: its changes, its layout and how it commits are its own
            assert (kind.column_changes, kind.resolution, kind.layout, kind.way_out) in (
                (ColumnChanges.ICEBERG, Resolution.BY_ID, Layout.TRANSFORMS, ""),       # by field id, one commit
                (ColumnChanges.DELTA, Resolution.BY_NAME, Layout.PARTITION_COLUMNS, ""))  # the engine's statements
            assert not kind.manages_undeclared
            assert metadata_reader(kind)  # its live tables are read from that metadata
        else:
            assert kind.column_changes is ColumnChanges.SPARK_SQL and kind.way_out and kind.layout is Layout.STORAGE
            assert kind.live_schema is LiveSchema.SPARK_COPY
            assert kind.resolution is Resolution.NOT_ASSUMED
        assert not kind.row_format_serde
    else:
        assert kind.serde in KNOWN_SERDES
        assert kind.column_changes is ColumnChanges.METASTORE and not kind.way_out and kind.layout is Layout.STORAGE
        assert kind.live_schema is LiveSchema.METASTORE
        assert kind.adds_columns and not kind.one_column
        named = kind.name != CUSTOM
        assert bool(kind.classes) == named == bool(kind.ddl_clause) == (kind.resolution is not Resolution.NOT_ASSUMED)
        if named:
            assert kind.ddl_clause == f"STORED AS {kind.name.upper()}"
            assert hive_kind(*kind.classes) is kind


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{'using' if k.data_source else 'format'}:{k.name}")
def test_each_kind_is_created_by_its_clause(kind: TableKind):
    classes = {} if kind.classes or kind.data_source else {"input_format": "com.example.In",
                                                           "output_format": "com.example.Out"}
    sql = ddl.create_table(Table("db", "t", (Column("a", "string"),), format=kind.name, data_source=kind.data_source,
                                 **classes))
    assert (kind.ddl_clause or "STORED AS INPUTFORMAT 'com.example.In' OUTPUTFORMAT 'com.example.Out'") in sql.splitlines()


def test_a_table_of_no_registered_kind_is_named():
    assert table_kind("hudi", data_source=True) is None and data_source_provider("hive") is None
    with pytest.raises(LookupError, match=r"db.t is of no table kind schemaflow knows \(hudi\)"):
        kind_of(Table("db", "t", (), format="hudi", data_source=True))


def test_the_docs_list_the_registered_names():
    concepts = Path(__file__).resolve().parent.parent / "docs" / "concepts"
    objects, project = (concepts / "objects.md").read_text(), (concepts / "project.md").read_text()
    stored_as = re.search(r"^format: parquet +# STORED AS: (.+)$", objects, re.M)
    using = re.search(r"^using: csv +# (.+) or (\w+)$", objects, re.M)
    assert stored_as and using
    assert stored_as.group(1).split(", ") == list(names(data_source=False))
    assert [*using.group(1).split(", "), using.group(2)] == list(names(data_source=True))
    for name in table_formats():
        assert re.search(rf"^format: {name} +# ", objects, re.M), f"docs/concepts/objects.md shows no format: {name}"
    *others, last = names(data_source=True)
    assert f"other than {', '.join(others)} and {last}," in " ".join(project.split())  # the scope's notice


def test_no_format_schemaflow_leaves_alone_is_a_registered_kind():
    assert not {foreign.name for foreign in FOREIGN_FORMATS} & set(names(data_source=True))


def test_a_live_iceberg_table_is_left_alone_though_a_declared_one_has_a_kind():
    iceberg = format_kind("iceberg")
    assert iceberg is not None and iceberg.ddl_clause == "USING iceberg"
    live = to_model(_live(iceberg))
    assert isinstance(live, Table) and kind_of(live) is iceberg
    assert unmanageable(live) == "an Iceberg table"


def test_a_live_delta_table_is_of_the_delta_kind_and_left_alone_unless_the_project_opts_in():
    delta = format_kind("delta")
    assert delta is not None and delta.ddl_clause == "USING delta" and delta.data_source
    assert "delta" not in {foreign.name for foreign in FOREIGN_FORMATS}
    # The metastore's placeholder columns are never taken for its schema: an entry naming no location reads none.
    placeholder = _live(delta) | {"sd": {"cols": [{"name": "col", "type": "array<string>"}]}}
    live = to_model(placeholder)
    assert isinstance(live, Table) and kind_of(live) is delta and live.columns == ()
    assert unmanageable(live) == ("its own metadata could not be read: its metastore entry names no location; see that "
                                  "Spark registered the Delta table")
    # Read from its log, an undeclared one is still left alone, unless schemaflow.yaml lists delta.
    read = Table("db", "t", (Column("id", "bigint"),), format="delta", data_source=True,
                 delta=DeltaState("file:/w/t", 3, "id-1", 1, 2))
    assert unmanageable(read) == ("a table of the kind 'delta', whose tables no file declares schemaflow leaves alone "
                                  "unless schemaflow.yaml lists it in manage_undeclared")
    assert unmanageable(read, frozenset({"delta"})) is None
