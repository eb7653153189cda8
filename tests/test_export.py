"""Schema files written from the model read back into the same model."""
from __future__ import annotations

from dataclasses import replace

from schemaflow.model import Column, Table, View
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
    written, skipped = write_schemas([TABLE, VIEW, replace(TABLE, name="odd", format="csv (Spark data source)")],
                                     tmp_path / "schemas")
    assert [p.relative_to(tmp_path).as_posix() for p in written] == ["schemas/retail/daily.yaml",
                                                                   "schemas/retail/events.yaml"]
    assert skipped == ["retail.odd: its format 'csv (Spark data source)' is not one schemaflow creates "
                       "(parquet, orc, avro, textfile, sequencefile, rcfile)"]
    loaded = load_catalog(tmp_path)
    assert loaded.get("retail.events") == TABLE
    view = loaded.get("retail.daily")
    assert (view.sql, view.columns, view.comment, view.partitioned_on) == (
        VIEW.sql, VIEW.columns, VIEW.comment, VIEW.partitioned_on)
    again, skipped = write_schemas([TABLE], tmp_path / "schemas")
    assert again == [] and skipped == [f"retail.events: {tmp_path}/schemas/retail/events.yaml exists "
                                       "(pass --force to overwrite it)"]
