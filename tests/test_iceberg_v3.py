"""An Iceberg table of format version 3, made by Spark with Iceberg's runtime, is read and left alone.

schemaflow commits Iceberg metadata through pyiceberg, whose 0.12 releases do not write version 3 ("Writing V3
is not yet supported", from pyiceberg's ``TableMetadataV3``); Iceberg 1.12's Spark runtime does. A version 3 table
another engine made is planned as left alone with one line saying why, declared or not, and an apply beside it
does its other steps and writes nothing to it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.catalog.iceberg_metadata import read_metadata
from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.model import Table
from tests.conversions import on_server
from tests.iceberg_spark import IcebergSpark, engine_fixture
from tests.projects import schemaflow

pytestmark = [pytest.mark.remote, pytest.mark.iceberg_engine]

DB = "v3_made"
REASON = ("is an Iceberg table of format version 3, and schemaflow's writer (pyiceberg 0.12) writes Iceberg format "
          "versions 1 and 2 only")


engine = engine_fixture()


def _location(server: str, key: str) -> str:
    live = ThriftReader(server).read((DB,)).get(key)
    assert isinstance(live, Table) and live.iceberg is not None
    return live.iceberg.metadata_location


def test_a_version_3_table_spark_made_is_read_and_left_alone_with_its_reason(
        engine: IcebergSpark, metastore_server: str, tmp_path: Path) -> None:
    engine.sql(f"CREATE DATABASE {DB}")
    for name in ("declared", "other"):
        engine.sql(f"CREATE TABLE {DB}.{name} (id bigint, name string) USING iceberg PARTITIONED BY (bucket(4, id)) "
                   "TBLPROPERTIES ('format-version'='3')")
        engine.sql(f"INSERT INTO {DB}.{name} VALUES (1, 'a'), (2, 'b')")
    key = f"{DB}.declared"
    made = _location(metastore_server, key)
    assert read_metadata(made)["format-version"] == 3  # the runtime wrote version 3 itself
    project = tmp_path / "project"
    (project / "schemas" / DB).mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(f"databases: [{DB}]\n")
    env = on_server(project, metastore_server, tmp_path)

    imported = schemaflow(project, "import", "--database", DB, env=env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert not list((project / "schemas").rglob("*.yaml"))  # no file validate would refuse
    assert f"not managed: {key} (an Iceberg table of format version 3," in imported.stdout + imported.stderr

    # Declared (another comment, a column more: what would be a commit) beside a table schemaflow creates.
    (project / "schemas" / DB / "declared.yaml").write_text(
        f"table: {key}\nformat: iceberg\ncomment: Made by Spark\ncolumns:\n  - {{name: id, type: bigint}}\n"
        "  - {name: name, type: string}\n  - {name: more, type: int}\npartitioned_by: ['bucket(4, id)']\n")
    (project / "schemas" / DB / "fresh.yaml").write_text(
        f"table: {DB}.fresh\nformat: iceberg\ncolumns:\n  - {{name: id, type: bigint}}\n")
    planned = schemaflow(project, "plan", env=env)
    assert planned.returncode == 2, planned.stdout + planned.stderr  # changes to apply
    assert planned.stdout.startswith(
        "1 step on 1 object, 0 destructive.\n"
        f"warning: not managed: {DB}.other (an Iceberg table of format version 3, and schemaflow's writer (pyiceberg "
        "0.12) writes Iceberg format versions 1 and 2 only); schemaflow leaves it alone\n"
        f"warning: left alone: {key} {REASON}; schemaflow reads it and changes nothing of it, whatever its file says\n"
        f"\n+ 1. create Iceberg table {DB}.fresh (1 column)\n"), planned.stdout

    applied = schemaflow(project, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert _location(metastore_server, key) == made  # nothing written to it
    assert engine.sql(f"SELECT id, name FROM {key} ORDER BY id") == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert isinstance(ThriftReader(metastore_server).read((DB,)).get(f"{DB}.fresh"), Table)
