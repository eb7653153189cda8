"""Schema files written from the model read back into the same model."""
from __future__ import annotations

from dataclasses import replace

import pytest

from schemaflow.model import Bucketing, Column, PartitionField, SortTerm, Table, View
from schemaflow.spec import load_catalog
from schemaflow.spec.export import schema_text, write_schemas

TABLE = Table("retail", "events", (Column("id", "bigint", "it's `odd`: yes"), Column("tags", "array<string>")),
              (Column("ds", "string", "Load date"),), comment="Line one\nline two", format="orc", external=True,
              location="file:/data/events", properties={"retention": "30", "owner": "ops"})
VIEW = View("retail", "daily", "SELECT id, ds\nFROM retail.events", (Column("id", comment="Event id"), Column("ds")),
            comment="Per day", partitioned_on=("ds",))


def test_a_table_is_written_as_the_readme_shows():
    assert schema_text(TABLE) == (
        "table: retail.events\n"
        "comment: |-\n  Line one\n  line two\n"
        "format: orc\n"
        "external: true\n"
        "location: file:/data/events\n"
        "columns:\n"
        "  - {name: id, type: bigint, comment: 'it''s `odd`: yes'}\n"
        "  - {name: tags, type: array<string>}\n"
        "partitioned_by:\n"
        "  - {name: ds, type: string, comment: Load date}\n"
        "properties: {owner: ops, retention: '30'}\n")


def test_written_files_load_back_into_the_same_objects(tmp_path):
    written, skipped = write_schemas([TABLE, VIEW, replace(TABLE, name="odd", format="avro", data_source=True)],
                                     tmp_path / "schemas")
    assert [p.relative_to(tmp_path).as_posix() for p in written] == ["schemas/retail/daily.yaml",
                                                                   "schemas/retail/events.yaml"]
    assert skipped == ["retail.odd: it is a table of the Spark data source 'avro', not one schemaflow creates "
                       "(parquet, orc, json, csv, text): leave it alone with exclude: in schemaflow.yaml"]
    loaded = load_catalog(tmp_path)
    assert loaded.get("retail.events") == TABLE
    view = loaded.get("retail.daily")
    assert (view.sql, view.columns, view.comment, view.partitioned_on) == (
        VIEW.sql, VIEW.columns, VIEW.comment, VIEW.partitioned_on)
    again, skipped = write_schemas([TABLE], tmp_path / "schemas")
    assert again == [] and skipped == [f"retail.events: {tmp_path}/schemas/retail/events.yaml exists "
                                       "(pass --force to overwrite it)"]


_COLUMNS = (Column("id", "bigint"), Column("name", "string"), Column("tags", "array<string>"))
_LAZY = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


@pytest.mark.parametrize("table, text", [
    # CSV holds no array (Spark refuses to create the table): the primitive columns.
    (Table("raw", "csv_in", _COLUMNS[:2], (Column("ds", "string"),), format="csv", data_source=True,
           serde_properties={"header": "true", "sep": "|"}, bucketing=Bucketing(("id",), 4, ("name",))),
     "using: csv\noptions: {header: 'true', sep: '|'}\n"),
    (Table("raw", "delimited", _COLUMNS, format="textfile", serde_properties={
        "field.delim": "|", "colelction.delim": ",", "mapkey.delim": ":", "line.delim": "\n", "escape.delim": "\\",
        "serialization.null.format": "NA"}),
     "row_format:\n  fields_terminated_by: '|'\n  collection_items_terminated_by: ','\n  map_keys_terminated_by: ':'\n"),
    (Table("raw", "multi", _COLUMNS, format="textfile", serde_properties={"field.delim": "||"}),
     "serde_properties: {field.delim: '||'}\n"),
    (Table("raw", "open_csv", _COLUMNS, format="textfile", serde="org.apache.hadoop.hive.serde2.OpenCSVSerde",
           serde_properties={"separatorChar": ",", "quoteChar": '"'}),
     "serde: org.apache.hadoop.hive.serde2.OpenCSVSerde\n"),
    (Table("raw", "classes", _COLUMNS, format="custom", input_format="com.example.In", output_format="com.example.Out"),
     "input_format: com.example.In\noutput_format: com.example.Out\n"),
    (Table("raw", "bucketed", _COLUMNS, format="orc", bucketing=Bucketing(("id",), 8)),
     "buckets: {clustered_by: [id], count: 8}\n"),
    # An Iceberg table: its storage is its own metadata's; transforms and sort terms as Spark writes them.
    (Table("raw", "clicks", (Column("ts", "timestamp"), *_COLUMNS[:2]), format="iceberg", data_source=True,
           properties={"format-version": "2"}, partition_spec=(PartitionField("day", "ts"), PartitionField("bucket", "id", 16)),
           sort_order=(SortTerm(PartitionField("identity", "name"), descending=True, nulls_first=False),)),
     "format: iceberg\ncolumns:\n  - {name: ts, type: timestamp}\n  - {name: id, type: bigint}\n"
     "  - {name: name, type: string}\npartitioned_by: [day(ts), 'bucket(16, id)']\n"
     "sorted_by: [name DESC NULLS LAST]\nproperties: {format-version: '2'}\n"),
])
def test_every_kind_of_storage_loads_back_as_it_was(tmp_path, table: Table, text: str) -> None:
    written, skipped = write_schemas([table], tmp_path / "schemas")
    assert skipped == []
    assert text in written[0].read_text()
    assert load_catalog(tmp_path).get(table.key) == table


def test_descending_buckets_are_skipped_with_the_reason(tmp_path) -> None:
    table = Table("raw", "t", _COLUMNS, format="orc", bucketing=Bucketing(("id",), 8, ("name desc",)))
    assert write_schemas([table], tmp_path / "schemas") == ([], [
        "raw.t: its buckets are sorted descending, which Spark cannot create: leave it alone with exclude: in "
        "schemaflow.yaml"])


def test_a_view_with_a_column_name_spark_generated_is_skipped_with_the_way_out_not_written(tmp_path):
    generated = replace(VIEW, columns=(Column("count(1)"), Column("(a + 1)")))
    written, skipped = write_schemas([generated], tmp_path / "schemas")
    assert written == []
    assert skipped == [f"{VIEW.key}: its column 'count(1)' has a name a file cannot declare (Spark before 3.2 named an "
                       "expression without an alias so): re-create it with an alias (... AS name), or leave it alone "
                       "with exclude: in schemaflow.yaml"]


def test_a_table_spark_made_that_validate_would_refuse_is_skipped_with_what_validate_says(tmp_path):
    # Spark creates a text data-source table of two columns, then refuses every read and write of it.
    lines = Table("raw", "lines", (Column("line", "string"), Column("more", "string")), format="text",
                  data_source=True)
    kept = Table("raw", "kept", (Column("line", "string"),), format="text", data_source=True)
    written, skipped = write_schemas([lines, kept], tmp_path / "schemas")
    assert written == [tmp_path / "schemas" / "raw" / "kept.yaml"]
    assert skipped == [
        "raw.lines: validate would refuse its file (Spark's text data source reads each line as one string column, "
        "and this table declares 2 data columns: every read and write of it would fail (\"Text data source supports "
        "only a single column\"); keep one, or use csv or json): re-create it in a form validate accepts, or leave "
        "it alone with exclude: in schemaflow.yaml"]
    assert not (tmp_path / "schemas" / "raw" / "lines.yaml").exists()
