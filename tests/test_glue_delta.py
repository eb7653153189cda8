"""Delta tables in a Glue Data Catalog, read from their logs (fast tier: moto's Glue in this process, a log deltalake
wrote): as delta-spark registers one (Spark's placeholder schema, provider ``delta``) and as Athena does
(``TBLPROPERTIES ('table_type' = 'DELTA')``: a location and no columns). Each reads as the Delta table its log holds,
never as the entry's placeholder; an undeclared one is left alone by a plan of its database."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from schemaflow.catalog.glue.client import GlueCatalog, GlueOptions
from schemaflow.catalog.glue.reader import GlueReader
from schemaflow.model import Column, Table
from tests.glue_versions import moto_aws, versioned_glue
from tests.inprocess import schemaflow

REGION, ACCOUNT = "eu-west-1", "123456789012"  # moto's account
PLACEHOLDER = [{"Name": "col", "Type": "array<string>", "Comment": "from deserializer"}]


@pytest.fixture
def glue(monkeypatch: pytest.MonkeyPatch) -> Iterator[GlueReader]:
    with moto_aws(monkeypatch), versioned_glue():
        boto3.client("glue", region_name=REGION).create_database(DatabaseInput={"Name": "lake"})
        yield GlueReader(GlueCatalog(GlueOptions(region=REGION)))


def _cli(project: Path, *argv: str) -> tuple[int, str, str]:
    ran = schemaflow("--project", str(project), *argv)
    return ran.code, ran.out, ran.err


def _delta_log(folder: Path) -> str:
    DeltaTable.create(str(folder), schema=pa.schema([pa.field("id", pa.int64()), pa.field("ds", pa.string())]),
                      partition_by=["ds"], description="Clicks", configuration={"delta.appendOnly": "true"})
    return str(folder)


def _entries(location: str) -> None:
    client = boto3.client("glue", region_name=REGION)
    client.create_table(DatabaseName="lake", TableInput={  # as Spark with delta-spark registers it
        "Name": "by_spark", "TableType": "EXTERNAL_TABLE",
        "Parameters": {"spark.sql.sources.provider": "delta", "EXTERNAL": "TRUE"},
        "StorageDescriptor": {"Columns": PLACEHOLDER, "Location": f"{location}-__PLACEHOLDER__",
                              "SerdeInfo": {"Parameters": {"path": location}}}})
    client.create_table(DatabaseName="lake", TableInput={  # as Athena's CREATE EXTERNAL TABLE registers it
        "Name": "by_athena", "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "DELTA"},
        "StorageDescriptor": {"Location": location}})


def test_delta_entries_of_either_kind_read_as_their_log_says(glue: GlueReader, tmp_path: Path) -> None:
    location = _delta_log(tmp_path / "clicks")
    _entries(location)
    read = glue.read(("lake",)).objects
    for name in ("by_spark", "by_athena"):
        table = read[f"lake.{name}"]
        assert isinstance(table, Table) and table.format == "delta" and table.unreadable is None, table
        assert table.columns == (Column("id", "bigint"),) and table.partition_columns == (Column("ds", "string"),)
        assert table.comment == "Clicks" and table.properties == {"delta.appendOnly": "true"}
        assert table.delta is not None and table.delta.log_version == 0


def test_an_undeclared_delta_table_is_left_alone_by_a_plan_of_its_database(glue: GlueReader, tmp_path: Path) -> None:
    _entries(_delta_log(tmp_path / "clicks"))
    project = tmp_path / "project"
    (project / "schemas" / "lake").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(
        f"databases: [lake]\nmetastore: {{type: glue, options: {{region: {REGION}, catalog_id: '{ACCOUNT}'}}}}\n")
    code, out, err = _cli(project, "plan")
    assert code == 0 and "No changes" in out, out + err


def test_import_writes_what_the_log_holds_and_a_change_is_blocked_saying_where_to_make_it(
        glue: GlueReader, tmp_path: Path) -> None:
    location = _delta_log(tmp_path / "clicks")
    _entries(location)
    project = tmp_path / "project"
    (project / "schemas" / "lake").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(f"databases: [lake]\nmanage_undeclared: [delta]\n"
                                             f"metastore: {{type: glue, options: {{region: {REGION}, catalog_id: '{ACCOUNT}'}}}}\n")
    code, out, err = _cli(project, "import", "--database", "lake")
    assert code == 0 and "Imported 2 of 2 objects of lake." in out, out + err
    written = (project / "schemas" / "lake" / "by_athena.yaml").read_text()
    assert written == ("table: lake.by_athena\ncomment: Clicks\nformat: delta\ncolumns:\n  - {name: id, type: bigint}\n"
                       "partitioned_by:\n  - {name: ds, type: string}\nproperties: {delta.appendOnly: 'true'}\n")
    assert _cli(project, "plan")[:2] == (0, "No changes: the Glue Data Catalog matches the schemas (databases: lake).\n")

    (project / "schemas" / "lake" / "by_athena.yaml").write_text(written.replace(
        "  - {name: id, type: bigint}\n", "  - {name: id, type: bigint}\n  - {name: note, type: string}\n"))
    (project / "schemas" / "lake" / "new.yaml").write_text(
        "table: lake.new\nformat: delta\ncolumns:\n  - {name: id, type: bigint}\n")
    code, out, err = _cli(project, "plan")
    shown = " ".join(out.split())
    assert code == 1, out + err
    for what in ("1. changing the Delta table on lake.by_athena", "2. creating the Delta table on lake.new"):
        assert what in shown, out
    for what in ("changing the Delta table", "creating the Delta table"):
        assert (f"BLOCKED: {what} commits to its log, and the Glue Data Catalog (metastore.type glue) commits no Delta changes "
                "in this release") in shown, out
    assert "make it with Spark and delta-spark where this catalog is Spark's metastore" in shown
    assert "alter Delta table lake.by_athena: add note string" in shown, out  # what the change would have made
    assert "create Delta table lake.new (1 column)" in shown, out
    code, _, err = _cli(project, "apply", "--auto-approve")
    assert code == 1 and "the plan has 2 blocked steps; nothing was applied" in err, err
    assert DeltaTable(location).version() == 0  # nothing committed to the log
