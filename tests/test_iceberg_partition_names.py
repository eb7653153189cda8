"""A replaced Iceberg partition field gets Iceberg's own name, and Spark's metadata tables keep reading.

Iceberg's metadata tables (``.files``, ``.partitions``, ``.entries``) read the fields of every partition spec as one
struct by field id: a new field under an old field's name (``id_bucket`` for ``bucket(4, id)`` after ``bucket(8,
id)``) breaks them for good. schemaflow names fields as Iceberg's spec evolution does (``catalog.iceberg_specs``):
read back here by Spark with Iceberg's own runtime after each replace, on format versions 2 and 1, and by pyiceberg.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

from schemaflow.catalog.iceberg_metadata import read_metadata
from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.model import Table
from tests.conversions import on_server
from tests.iceberg_spark import IcebergSpark, engine_fixture
from tests.projects import schemaflow

pytestmark = [pytest.mark.remote, pytest.mark.iceberg_engine]

DB = "part_names"
FIRST, REPLACED = "[bucket(8, id), truncate(4, code), day(ts)]", "[bucket(4, id), truncate(2, code), hour(ts)]"
TABLE = """\
table: {db}.{name}
format: iceberg
columns:
  - {{name: id, type: bigint}}
  - {{name: code, type: string}}
  - {{name: ts, type: timestamp}}
partitioned_by: {spec}
properties: {{format-version: '{version}'}}
"""


engine = engine_fixture()


def _declare(project: Path, spec: str) -> None:
    for name, version in (("events", 2), ("legacy", 1)):
        (project / "schemas" / DB / f"{name}.yaml").write_text(TABLE.format(db=DB, name=name, spec=spec, version=version))


def _apply(project: Path, env: dict[str, str]) -> None:
    applied = schemaflow(project, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr


def _spec(server: str, key: str) -> tuple[list[tuple[int, str, str]], str]:
    """The table's default spec (field id, name, transform) as its metadata file holds it, and that file."""
    live = ThriftReader(server).read((DB,)).get(key)
    assert isinstance(live, Table) and live.iceberg is not None
    metadata = read_metadata(live.iceberg.metadata_location)
    spec = next(s for s in metadata["partition-specs"] if s["spec-id"] == metadata["default-spec-id"])
    return [(f["field-id"], f["name"], f["transform"]) for f in spec["fields"]], live.iceberg.metadata_location


def _write(engine: IcebergSpark, key: str, first: int) -> None:
    engine.sql(f"INSERT INTO {key} VALUES ({first}, 'alpha{first}', timestamp'2024-01-0{first} 10:00:00'), "
               f"({first + 1}, 'beta{first}', timestamp'2024-01-0{first + 1} 11:00:00')")


def _metadata_tables_read(engine: IcebergSpark, key: str, rows: int) -> set[str]:
    """Each of the table's metadata tables Spark reads (none fails), and the names of its partition struct."""
    assert engine.sql(f"SELECT count(*) AS n FROM {key}") == [{"n": rows}]
    files = engine.sql(f"SELECT record_count, partition FROM {key}.files")
    assert sum(f["record_count"] for f in files) == rows
    assert sum(p["record_count"] for p in engine.sql(f"SELECT record_count FROM {key}.partitions")) == rows
    assert len(engine.sql(f"SELECT status FROM {key}.entries")) == len(files)
    return {name for f in files for name in f["partition"]}


def test_replaced_partition_fields_take_icebergs_names_and_spark_reads_the_metadata_tables(
        engine: IcebergSpark, metastore_server: str, tmp_path: Path) -> None:
    engine.sql(f"CREATE DATABASE {DB}")
    project = tmp_path / "project"
    (project / "schemas" / DB).mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(f"databases: [{DB}]\n")
    env = on_server(project, metastore_server, tmp_path)
    events, legacy = f"{DB}.events", f"{DB}.legacy"
    _declare(project, FIRST)
    _apply(project, env)
    created = [(1000, "id_bucket", "bucket[8]"), (1001, "code_trunc", "truncate[4]"), (1002, "ts_day", "day")]
    assert _spec(metastore_server, events)[0] == created  # a new table's names, as Spark's CREATE TABLE gives
    for key in (events, legacy):
        _write(engine, key, 1)

    _declare(project, REPLACED)  # every field replaced by another of its kind
    _apply(project, env)
    assert _spec(metastore_server, events)[0] == [
        (1003, "id_bucket_4", "bucket[4]"), (1004, "code_trunc_2", "truncate[2]"), (1005, "ts_hour", "hour")]
    # Format version 1 keeps the fields in place, void under their own names.
    assert _spec(metastore_server, legacy)[0] == [
        (1000, "id_bucket", "void"), (1001, "code_trunc", "void"), (1002, "ts_day", "void"),
        (1003, "id_bucket_4", "bucket[4]"), (1004, "code_trunc_2", "truncate[2]"), (1005, "ts_hour", "hour")]
    for key in (events, legacy):
        _write(engine, key, 3)
        assert _metadata_tables_read(engine, key, 4) == {"id_bucket", "code_trunc", "ts_day", "id_bucket_4",
                                                         "code_trunc_2", "ts_hour"}

    _declare(project, FIRST)  # back again: format version 2 takes the first fields back, ids and names
    _apply(project, env)
    assert _spec(metastore_server, events)[0] == created
    _write(engine, events, 5)
    assert _metadata_tables_read(engine, events, 6) == {"id_bucket", "code_trunc", "ts_day", "id_bucket_4",
                                                        "code_trunc_2", "ts_hour"}
    again = schemaflow(project, "plan", env=env)
    assert (again.returncode, again.stdout) == (0, f"No changes: the metastore matches the schemas (databases: {DB}).\n")

    # pyiceberg reads every row, written under each spec.
    location = _spec(metastore_server, events)[1]
    assert sorted(r["id"] for r in StaticTable.from_metadata(location).scan().to_arrow().to_pylist()) == [1, 2, 3, 4, 5, 6]
