"""What a rewrite's copy does to values and readers, said in its step before anything runs (``plan.hazards``): values
a conversion cannot hold, a partition value of '' (which Spark writes as the default partition, read back as NULL),
column names Spark reported with capitals, the folder that moves with the backup; each with the way through where a
project declares one (a migration's ``accept_loss``), rendered in the terminal, markdown and JSON."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.catalog.hive.thrift_data import to_model
from schemaflow.errors import SpecError
from schemaflow.model import AcceptLoss, Catalog, Column, Migration, Table, fingerprint, from_data, to_data
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.steps import RewriteRows, Step
from schemaflow.render import render
from schemaflow.render.review import Review
from schemaflow.project import load_project
from schemaflow.spec.loader import load_catalog
from schemaflow.sql.rewrite import Filled
from schemaflow.workflow import hash_migrations

FOLDER = ("cut-over: the old files move with retail.people into the folder of retail.people_backup_, and those of "
          "retail.people_rewrite_ into the folder of retail.people: what reads that folder by path reads the new files "
          "from then on, and what names the old files themselves (an Iceberg snapshot table of them, a saved list of "
          "paths) no longer finds them")
EMPTY = ("name: a row whose name is '' cannot be copied as it is: the partition Spark writes it in "
         "(name=__HIVE_DEFAULT_PARTITION__) reads NULL, and then the rewrite stops before the cut-over; a migration with "
         "accept_loss: {table: retail.people, column: name} copies it as NULL")
EMPTY_ACCEPTED = ("name: a row whose name is '' is copied with name NULL, as a migration accepts (the partition Spark "
                  "writes it in (name=__HIVE_DEFAULT_PARTITION__) reads NULL)")
ACCEPTING = Migration("0001_empty_names", "", (AcceptLoss("retail.people", "name"),))


def people(*partitioned_by: str, data_source: bool = False, **types: str) -> Table:
    """retail.people (id, name, code, ds), its columns of ``types`` where given, partitioned by ``partitioned_by``."""
    columns = [Column(n, types.get(n, t)) for n, t in (("id", "int"), ("name", "string"), ("code", "int"),
                                                     ("ds", "string"))]
    return Table("retail", "people", tuple(c for c in columns if c.name not in partitioned_by),
                 tuple(c for n in partitioned_by for c in columns if c.name == n), data_source=data_source, version="v1")


def step(want: Table, have: Table, *migrations: Migration) -> Step:
    [only] = PlanBuilder(Catalog(("retail",), {want.key: want}, migrations=migrations),
                         Catalog(("retail",), {have.key: have}), allow_destructive=True).build().steps
    assert only.kind == "rewrite_table"
    return only


def test_a_new_partition_column_of_text_may_meet_an_empty_value_and_a_migration_accepting_it_copies_it_as_null():
    for data_source in (False, True):  # Spark writes '' as the default partition of either kind (measured, 4.3)
        have, want = people("ds", data_source=data_source), people("name", data_source=data_source)
        said = step(want, have)
        assert said.hazards == (EMPTY, FOLDER)
        [copy] = said.body
        assert isinstance(copy, RewriteRows) and "NULLIF" not in copy.copy

        accepted = step(want, have, ACCEPTING)
        assert accepted.hazards == (EMPTY_ACCEPTED, FOLDER)
        [copy] = accepted.body
        assert isinstance(copy, RewriteRows)
        # Written as '' where it is NULL too: Spark's file writer puts both in the default partition, read back as NULL.
        assert copy.copy.endswith("SELECT `id` AS `id`, `code` AS `code`, `ds` AS `ds`, COALESCE(`name`, '') AS `name` "
                                  "FROM `retail`.`people`")
        # The saved plan keeps it, and loads back the same.
        data = copy.to_data()
        assert [c for c in data["columns"] if c.get("empty_as_null")] == [
            {"column": "name", "type": "string", "source": "name", "old_type": "string", "accepts_loss": True,
             "empty_as_null": True, "nulls_as_empty": True}]
        assert RewriteRows.from_data(json.loads(json.dumps(data))) == copy


def test_a_migration_accepts_the_loss_in_a_partition_column_and_one_naming_no_column_lists_them_too(tmp_path: Path):
    (tmp_path / "schemas/retail").mkdir(parents=True)
    (tmp_path / "schemas/retail/people.yaml").write_text(
        "table: retail.people\nusing: parquet\ncolumns: [{name: id, type: int}]\n"
        "partitioned_by: [{name: name, type: string}]\n")
    (tmp_path / "migrations").mkdir()
    accepting = "description: A name that is '' is no name\nchanges:\n  - accept_loss: {table: retail.people, column: %s}\n"
    (tmp_path / "migrations/0001_empty_names.yaml").write_text(accepting % "name")
    hash_migrations(load_project(tmp_path, env={}))
    [migration] = load_catalog(tmp_path).migrations
    assert migration.changes == (AcceptLoss("retail.people", "name"),)

    (tmp_path / "migrations/0001_empty_names.yaml").write_text(accepting % "nam")
    hash_migrations(load_project(tmp_path, env={}))
    with pytest.raises(SpecError) as refused:
        load_catalog(tmp_path)
    assert str(refused.value) == (
        "migrations/0001_empty_names.yaml:3:18: accepts values of nam its conversion makes NULL, but retail.people then "
        "has no column nam (its columns then: id, name): name the column as the table has it after the migration's "
        "renames")


def test_only_a_partition_column_that_can_meet_an_empty_value_is_said_to():
    # Already a partition column: no live partition value is '' (Spark refuses one, and writes it as the default).
    assert step(people("ds", "name"), people("name", ds="date")).hazards == (FOLDER,)
    assert step(people("name", id="bigint", data_source=True), people("name", data_source=True)).hazards == (FOLDER,)
    # A number, a char (padded to its length) or a number made text is never ''.
    assert step(people("code"), people("ds")).hazards == (FOLDER,)
    assert step(people("name", name="char(4)"), people("ds", name="char(4)")).hazards == (FOLDER,)
    assert step(people("code", code="string"), people("ds")).hazards == (FOLDER,)
    # A varchar is text as a string is, and the filling value converts before it compares.
    assert step(people("name", name="varchar(8)"), people("ds")).hazards[1].startswith(
        "name: a row whose name is '' cannot be copied")
    [copy] = step(people("name", name="varchar(8)"), people("ds"), ACCEPTING).body
    assert isinstance(copy, RewriteRows) and "NULLIF(TRY_CAST(`name` AS VARCHAR(8)), '') AS `name`" in copy.copy


def test_a_conversion_that_can_lose_values_says_which_column_and_the_way_through():
    said = step(people("ds", code="smallint", name="decimal(6,1)", id="decimal(10,2)"),
                people("ds", name="decimal(8,2)", id="int"))
    assert said.hazards == (
        "id: int -> decimal(10,2) can lose values (a value decimal(10,2) cannot hold becomes NULL, and then the rewrite "
        "stops before the cut-over; a migration with accept_loss: {table: retail.people, column: id} makes them NULL "
        "as intended)",
        "name: decimal(8,2) -> decimal(6,1) can lose values (a value decimal(6,1) cannot hold becomes NULL, and then "
        "the rewrite stops before the cut-over; a migration with accept_loss: {table: retail.people, column: name} "
        "makes them NULL as intended)",
        "code: int -> smallint can lose values (a value smallint cannot hold becomes NULL, and then the rewrite stops "
        "before the cut-over; a migration with accept_loss: {table: retail.people, column: code} makes them NULL as "
        "intended)",
        FOLDER)
    text = step(people("ds", name="int"), people("ds"), ACCEPTING)
    assert text.hazards == ("name: string -> int can lose values (a value int cannot hold becomes NULL, as a migration "
                            "accepts: the copy counts them)", FOLDER)
    [copy] = text.body
    assert isinstance(copy, RewriteRows) and [f.column for f in copy.columns if f.accepts_loss] == ["name"]
    assert not any(f.empty_as_null for f in copy.columns)  # a data column: its '' is kept
    # Widening loses nothing: the folder alone.
    assert step(people("ds", id="bigint", code="decimal(12,2)", data_source=True),
                people("ds", data_source=True)).hazards == (FOLDER,)


# As Spark 4 stores CREATE TABLE retail.people (id INT, S_manager STRING, Dept STRING, ds STRING) USING parquet
# PARTITIONED BY (ds): the metastore's columns in lower case, Spark's copy of the schema spelt as declared.
SPELT = {
    "dbName": "retail", "tableName": "people", "tableType": "MANAGED_TABLE",
    "partitionKeys": [{"name": "ds", "type": "string"}],
    "sd": {"cols": [{"name": "col", "type": "array<string>", "comment": "from deserializer"}], "serdeInfo": {}},
    "parameters": {"spark.sql.sources.provider": "parquet", "spark.sql.sources.schema.numPartCols": "1",
                   "spark.sql.sources.schema.partCol.0": "ds", "spark.sql.sources.schema": json.dumps(
                       {"type": "struct", "fields": [{"name": n, "type": "string" if n != "id" else "integer",
                                                      "nullable": True, "metadata": {}}
                                                     for n in ("id", "S_manager", "Dept", "ds")]}),
                   "schemaflow.version": "v1"},
}


def test_column_names_spark_reported_with_capitals_are_said_to_change_case():
    live = to_model(SPELT)
    assert isinstance(live, Table) and [c.name for c in live.all_columns] == ["id", "s_manager", "dept", "ds"]
    assert live.spelt == ("S_manager", "Dept")
    # No part of the table's definition: its fingerprint and plain data are those of a table without capitals.
    plain = replace(live, spelt=())
    assert fingerprint(live) == fingerprint(plain) and live == plain
    assert to_data(live)["spelt"] == ["S_manager", "Dept"] and "spelt" not in to_data(plain)
    assert from_data(to_data(live)) == live and from_data(to_data(live)).spelt == live.spelt  # type: ignore[union-attr]

    want = replace(live, columns=(Column("id", "bigint"), Column("s_manager", "string"), Column("dept", "string")),
                   spelt=(), version=None)
    assert step(want, live).hazards == (
        "column names: Spark reports S_manager as s_manager, Dept as dept from the cut-over on (the new table has the "
        "declared names, in lower case): SQL finds either, but what matches names exactly (a DataFrame's rows in "
        "Python, a schema compared as text) sees them change", FOLDER)


def test_a_hive_table_whose_copy_of_spark_s_schema_is_not_one_spark_wrote_is_read_with_no_names_spelt():
    io = "org.apache.hadoop.hive.ql.io.parquet."
    hive = {"dbName": "retail", "tableName": "people", "tableType": "MANAGED_TABLE",
            "sd": {"cols": [{"name": "id", "type": "int"}], "inputFormat": io + "MapredParquetInputFormat",
                   "outputFormat": io + "MapredParquetOutputFormat",
                   "serdeInfo": {"serializationLib": io + "serde.ParquetHiveSerDe"}}}

    def spelt(parameters: dict[str, str]) -> tuple[str, ...]:
        live = to_model({**hive, "parameters": parameters})
        assert isinstance(live, Table) and [c.name for c in live.columns] == ["id"] and live.format == "parquet"
        return live.spelt

    for broken in ("{not json", "[1]", '{"fields": {"name": "Id"}}', '{"fields": [{"name": 7}, "Id"]}'):
        assert spelt({"spark.sql.sources.schema": broken}) == ()
    assert spelt({"spark.sql.sources.schema.numParts": "two"}) == ()
    assert spelt({"spark.sql.sources.schema.numParts": "2"}) == ()  # its parts missing
    assert spelt({"spark.sql.sources.schema": '{"fields": [{"name": 7}, {"name": "Id"}]}'}) == ("Id",)


def test_a_resumed_cut_over_says_nothing_of_the_copy_it_does_not_make_and_each_rendering_shows_the_hazards():
    have, want = people("ds"), people("name")
    backup = replace(have, name="people_backup_", backup_of="retail.people")
    staging = replace(want, name="people_rewrite_", rewrite_of="retail.people", version="claimed")
    [resumed] = PlanBuilder(Catalog(("retail",), {want.key: want}),
                            Catalog(("retail",), {backup.key: backup, staging.key: staging}),
                            allow_destructive=True).build().steps
    assert resumed.summary == "rewrite table retail.people: finish the cut-over" and resumed.hazards == ()

    plan = PlanBuilder(Catalog(("retail",), {want.key: want}), Catalog(("retail",), {have.key: have}),
                       allow_destructive=True).build()
    shown = render(Review(plan), "text")
    assert f"hazard: {EMPTY}" in shown and f"hazard: {FOLDER}" in shown and ", 1 hazardous" in shown
    markdown = render(Review(plan), "markdown")
    assert "⚠ name: a row whose name is '' cannot be copied as it is" in markdown and "⚠ cut-over: the old files move" in markdown
    assert json.loads(render(Review(plan), "json"))["steps"][0]["hazards"] == [EMPTY, FOLDER]


def test_a_filled_column_loads_from_a_plan_saved_before_it_had_empty_as_null():
    assert Filled(**{"column": "n", "type": "int", "source": "n", "old_type": "string"}) == Filled(
        "n", "int", "n", "string", accepts_loss=False, empty_as_null=False)
