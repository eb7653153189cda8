"""A Delta table's log read without a JVM: compared with deltalake (delta-rs, an independent reader of the same log),
written by hand where deltalake cannot write (column mapping, type widening, V2 and multi-part checkpoints), and
read as the hostile input a metastore entry's location can point at.

Each hostile case must end in ``Unreadable`` with a one-line reason that quotes nothing of the files read.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, Field, TableFeatures, write_deltalake
from pyarrow import fs

from schemaflow.catalog import delta_log
from schemaflow.catalog.delta_log import DeltaSnapshot, delta_table, is_delta, read_delta_log
from schemaflow.catalog.metadata_bounds import BudgetSpent, MetadataBudget
from schemaflow.catalog.metadata_readers import Unreadable
from schemaflow.model import Column, fingerprint, from_data, to_data

SECRET = "s3cr3t-do-not-print"
ROWS = pa.table({"Id": pa.array([1, 2], pa.int64()), "name": ["a", "b"], "day": ["d1", "d2"]})


def unreadable(location: str, storage: Sequence[str] = (), **kwargs: Any) -> str:
    with pytest.raises(Unreadable) as raised:
        read_delta_log(location, storage, **kwargs)
    reason = str(raised.value)
    assert "\n" not in reason and SECRET not in reason and SECRET not in raised.value.advice
    return reason


def agrees_with_deltalake(path: Path) -> DeltaSnapshot:
    """The snapshot schemaflow reads, checked against what deltalake reads of the same log."""
    read = read_delta_log(str(path))
    table = DeltaTable(str(path))
    metadata, protocol = table.metadata(), table.protocol()
    fields = json.loads(table.schema().to_json())["fields"]
    assert read.state.log_version == table.version()
    assert read.state.table_id == metadata.id
    assert (read.state.min_reader_version, read.state.min_writer_version) == (protocol.min_reader_version,
                                                                              protocol.min_writer_version)
    assert read.state.reader_features == tuple(sorted(protocol.reader_features or ()))
    assert read.state.writer_features == tuple(sorted(protocol.writer_features or ()))
    assert read.comment == (metadata.description or None)
    assert dict(read.properties) == dict(metadata.configuration)
    assert [c.name for c in read.partition_columns] == [name.lower() for name in metadata.partition_columns]
    assert [c.name for c in read.columns] == [f["name"].lower() for f in fields
                                              if f["name"] not in metadata.partition_columns]
    comments = {f["name"].lower(): f.get("metadata", {}).get("comment") for f in fields}
    assert {c.name: c.comment for c in (*read.columns, *read.partition_columns)} == comments
    assert read.spelt == tuple(f["name"] for f in fields if f["name"] != f["name"].lower())
    return read


def types(snapshot: DeltaSnapshot) -> dict[str, str | None]:
    return {c.name: c.type for c in (*snapshot.columns, *snapshot.partition_columns)}


# What deltalake writes, read back

def test_a_partitioned_table_with_a_description_and_properties_reads_as_deltalake_reads_it(tmp_path: Path) -> None:
    write_deltalake(tmp_path, ROWS, partition_by=["day"], description="orders by day", name="orders",
                    configuration={"delta.appendOnly": "false", "delta.logRetentionDuration": "interval 7 days"})
    read = agrees_with_deltalake(tmp_path)
    assert read.columns == (Column("id", "bigint"), Column("name", "string"))
    assert read.partition_columns == (Column("day", "string"),)
    assert read.spelt == ("Id",)
    assert read.state.location == str(tmp_path) and read.state.column_mapping == "none"


def test_every_type_deltalake_writes_reads_as_hive_spells_it(tmp_path: Path) -> None:
    schema = pa.schema([
        ("b", pa.bool_()), ("t", pa.int8()), ("s", pa.int16()), ("i", pa.int32()), ("l", pa.int64()),
        ("f", pa.float32()), ("d", pa.float64()), ("m", pa.decimal128(10, 2)), ("day", pa.date32()),
        ("at", pa.timestamp("us", "UTC")), ("bin", pa.binary()), ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.int32())),
        ("addr", pa.struct([("street", pa.string()), ("Zip Code", pa.int32())]))])
    DeltaTable.create(tmp_path, schema)
    read = agrees_with_deltalake(tmp_path)
    assert types(read) == {
        "b": "boolean", "t": "tinyint", "s": "smallint", "i": "int", "l": "bigint", "f": "float", "d": "double",
        "m": "decimal(10,2)", "day": "date", "at": "timestamp", "bin": "binary", "tags": "array<string>",
        "attrs": "map<string,int>", "addr": "struct<street:string,`Zip Code`:int>"}


def test_columns_added_and_comments_set_by_deltalake_are_read_in_order(tmp_path: Path) -> None:
    write_deltalake(tmp_path, ROWS)
    table = DeltaTable(tmp_path)
    table.alter.add_columns([Field("amount", "double", nullable=True), Field("note", "string", nullable=True)])
    table.alter.set_column_metadata("amount", {"comment": "in euros"})
    table.alter.set_table_description("orders")
    table.alter.set_table_properties({"delta.checkpointInterval": "50"})
    write_deltalake(tmp_path, ROWS.append_column("extra", pa.array([1, 2], pa.int32())), mode="append",
                    schema_mode="merge")
    read = agrees_with_deltalake(tmp_path)
    assert read.columns == (Column("id", "bigint"), Column("name", "string"), Column("day", "string"),
                            Column("amount", "double", "in euros"), Column("note", "string"), Column("extra", "int"))
    assert read.comment == "orders" and read.properties == {"delta.checkpointInterval": "50"}
    assert read.state.log_version == 5


def test_the_newest_checkpoint_and_the_commits_after_it_are_the_snapshot(tmp_path: Path) -> None:
    write_deltalake(tmp_path, ROWS, partition_by=["day"])
    for _ in range(11):
        write_deltalake(tmp_path, ROWS, mode="append")
    DeltaTable(tmp_path).create_checkpoint()
    log = tmp_path / "_delta_log"
    assert (log / "00000000000000000011.checkpoint.parquet").exists()
    for version in range(11):  # the commits a checkpoint covers may be cleaned up: it alone must then say it all
        (log / f"{version:020d}.json").unlink()
    DeltaTable(tmp_path).alter.add_columns([Field("late", "long", nullable=True)])
    write_deltalake(tmp_path, ROWS.append_column("late", pa.array([1, 2], pa.int64())), mode="append")
    read = agrees_with_deltalake(tmp_path)
    assert read.state.log_version == 13
    assert [c.name for c in read.columns] == ["id", "name", "late"]


def test_features_deltalake_enables_are_read_sorted(tmp_path: Path) -> None:
    DeltaTable.create(tmp_path, ROWS.schema, configuration={"delta.enableDeletionVectors": "true",
                                                            "delta.enableChangeDataFeed": "true"})
    DeltaTable(tmp_path).alter.add_feature([TableFeatures.TimestampWithoutTimezone, TableFeatures.DomainMetadata],
                                           allow_protocol_versions_increase=True)
    read = agrees_with_deltalake(tmp_path)
    assert (read.state.min_reader_version, read.state.min_writer_version) == (3, 7)
    assert "deletionVectors" in read.state.reader_features and "timestampNtz" in read.state.reader_features
    assert {"changeDataFeed", "domainMetadata"} <= set(read.state.writer_features)
    assert list(read.state.writer_features) == sorted(read.state.writer_features)


# Logs deltalake cannot write, written as PROTOCOL.md lays them out

def field(name: str, type_: Any, identity: int, physical: str | None = None, **metadata: Any) -> dict[str, Any]:
    mapped = {"delta.columnMapping.id": identity, "delta.columnMapping.physicalName": physical or f"col-{identity}"}
    return {"name": name, "type": type_, "nullable": True, "metadata": mapped | metadata}


def metadata_action(fields: Sequence[Mapping[str, Any]], partitions: Sequence[str] = (), table_id: str = "",
                    **configuration: str) -> dict[str, Any]:
    return {"metaData": {"id": table_id or str(uuid.UUID(int=7)), "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps({"type": "struct", "fields": list(fields)}),
                         "partitionColumns": list(partitions), "configuration": dict(configuration),
                         "createdTime": 1}}


def commit(root: Path, version: int, *actions: Mapping[str, Any]) -> Path:
    log = root / "_delta_log"
    log.mkdir(exist_ok=True)
    path = log / f"{version:020d}.json"
    lines = [{"commitInfo": {"operation": "WRITE", "note": SECRET}}, *actions]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def name_mapped(root: Path) -> None:
    """A table created with column mapping by name (protocol 2/5), then a column renamed and one dropped, as
    delta-spark's RENAME COLUMN and DROP COLUMN write them: the physical names stay."""
    commit(root, 0, {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
           metadata_action([field("id", "long", 1), field("name", "string", 2, comment="who"),
                            field("gone", "integer", 3), field("day", "date", 4)], ["day"],
                           **{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "4"}))
    commit(root, 1, metadata_action([field("id", "long", 1), field("full_name", "string", 2, "col-2", comment="who"),
                                     field("day", "date", 4)], ["day"],
                                    **{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "4"}))


def test_a_column_mapped_log_reads_its_logical_names_and_comments(tmp_path: Path) -> None:
    name_mapped(tmp_path)
    read = read_delta_log(str(tmp_path))
    assert read.columns == (Column("id", "bigint"), Column("full_name", "string", "who"))
    assert read.partition_columns == (Column("day", "date"),)
    assert read.state == delta_log.DeltaState(str(tmp_path), 1, str(uuid.UUID(int=7)), 2, 5, (), (), "name")
    table = DeltaTable(tmp_path)  # deltalake reads what it cannot write: the same schema, protocol and version
    assert [f.name for f in table.schema().fields] == ["id", "full_name", "day"]
    assert (table.protocol().min_reader_version, table.protocol().min_writer_version, table.version()) == (2, 5, 1)


def test_a_widened_type_reads_as_its_new_type_on_protocol_3_7(tmp_path: Path) -> None:
    features = {"readerFeatures": ["typeWidening", "columnMapping"],
                "writerFeatures": ["typeWidening", "columnMapping", "appendOnly", "invariants"]}
    commit(tmp_path, 0, {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, **features}},
           metadata_action([field("id", "integer", 1), field("price", "float", 2)],
                           **{"delta.columnMapping.mode": "id", "delta.enableTypeWidening": "true"}))
    widened = [{"fromType": "integer", "toType": "long", "tableVersion": 1}]
    commit(tmp_path, 1, metadata_action([field("id", "long", 1, **{"delta.typeChanges": widened}),
                                         field("price", "double", 2, **{"delta.typeChanges": [
                                             {"fromType": "float", "toType": "double", "tableVersion": 1}]})],
                                        **{"delta.columnMapping.mode": "id", "delta.enableTypeWidening": "true"}))
    read = read_delta_log(str(tmp_path))
    assert read.columns == (Column("id", "bigint"), Column("price", "double"))
    assert read.state.reader_features == ("columnMapping", "typeWidening")
    assert read.state.writer_features == ("appendOnly", "columnMapping", "invariants", "typeWidening")
    assert read.state.column_mapping == "id" and read.state.log_version == 1
    assert read.properties == {"delta.columnMapping.mode": "id", "delta.enableTypeWidening": "true"}


def checkpoint_of(root: Path) -> pa.Table:
    """The classic checkpoint deltalake writes of ``root``'s log at its version, as a table of actions."""
    DeltaTable(root).create_checkpoint()
    version = DeltaTable(root).version()
    return pq.read_table(root / "_delta_log" / f"{version:020d}.checkpoint.parquet")


def test_a_multi_part_checkpoint_is_read_when_every_part_is_there(tmp_path: Path) -> None:
    write_deltalake(tmp_path, ROWS, description="parted")
    write_deltalake(tmp_path, ROWS, mode="append")
    actions = checkpoint_of(tmp_path)
    log = tmp_path / "_delta_log"
    (log / "00000000000000000001.checkpoint.parquet").unlink()
    (log / "_last_checkpoint").write_text(json.dumps({"version": 1, "size": actions.num_rows, "parts": 2}))
    pq.write_table(actions.slice(0, 1), log / "00000000000000000001.checkpoint.0000000001.0000000002.parquet")
    pq.write_table(actions.slice(1), log / "00000000000000000001.checkpoint.0000000002.0000000002.parquet")
    (log / "00000000000000000000.json").unlink()  # the checkpoint alone holds the metaData
    read = read_delta_log(str(tmp_path))
    assert read.comment == "parted" and read.state.log_version == 1
    assert read.columns == (Column("id", "bigint"), Column("name", "string"), Column("day", "string"))
    (log / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()  # a part missing: no checkpoint
    assert "names in _last_checkpoint a checkpoint that is not in it" in unreadable(str(tmp_path))
    (log / "_last_checkpoint").unlink()
    assert "holds no checkpoint and its first commits are gone" in unreadable(str(tmp_path))


def test_a_uuid_named_v2_checkpoint_in_json_is_read(tmp_path: Path) -> None:
    name_mapped(tmp_path)
    log = tmp_path / "_delta_log"
    read = read_delta_log(str(tmp_path))
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["columnMapping", "v2Checkpoint"],
                "writerFeatures": ["columnMapping", "v2Checkpoint"]}
    lines = [{"checkpointMetadata": {"version": 1}}, {"protocol": protocol},
             metadata_action([field("id", "long", 1), field("full_name", "string", 2, comment="who")],
                             **{"delta.columnMapping.mode": "name"}),
             {"sidecar": {"path": "x.parquet", "sizeInBytes": 1, "modificationTime": 1}}]
    name = f"00000000000000000001.checkpoint.{uuid.UUID(int=9)}.json"
    (log / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    (log / "_last_checkpoint").write_text(json.dumps({"version": 1, "size": 4, "v2Checkpoint": {"path": name}}))
    (log / "00000000000000000000.json").unlink()
    (log / "00000000000000000001.json").unlink()
    after = read_delta_log(str(tmp_path))
    assert after.columns == read.columns and after.partition_columns == ()
    assert after.state.reader_features == ("columnMapping", "v2Checkpoint") and after.state.log_version == 1


# What a metastore entry's location can point at

def test_a_location_that_is_relative_or_elsewhere_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "is a relative path" in unreadable("lake/t")
    assert "is a relative path" in unreadable("file:lake/t")
    assert "names the host 'elsewhere'" in unreadable("file://elsewhere/lake/t")
    assert "is not a local path nor on object storage or HDFS" in unreadable("http://example.com/t")
    asked: list[str] = []
    monkeypatch.setattr(delta_log, "_filesystem", lambda location: asked.append(location))
    assert "is not on the storage its database is on (s3://lake)" in unreadable("s3://other/t", ("s3://lake/db",))
    assert asked == []


def test_a_log_on_its_databases_object_storage_is_listed_and_read_through_pyarrow(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    write_deltalake(tmp_path / "t", ROWS, partition_by=["day"])
    for _ in range(10):
        write_deltalake(tmp_path / "t", ROWS, mode="append")
    DeltaTable(tmp_path / "t").create_checkpoint()
    write_deltalake(tmp_path / "t", ROWS, mode="append")
    asked: list[str] = []

    def local_as_remote(location: str) -> tuple[fs.FileSystem, str]:
        asked.append(location)
        return fs.LocalFileSystem(), str(tmp_path) + location.removeprefix("s3://lake")
    monkeypatch.setattr(delta_log, "_filesystem", local_as_remote)
    read = read_delta_log("s3://lake/t", ("s3://Lake/warehouse",))
    assert asked == ["s3://lake/t"]
    assert read.state.log_version == 11 and read.state.location == "s3://lake/t"
    assert read.partition_columns == (Column("day", "string"),)
    assert "holds no _delta_log" in unreadable("s3://lake/absent", ("s3://lake",))


@pytest.mark.parametrize("make, said", [
    (lambda log: os.symlink("/etc/passwd", log / "00000000000000000001.json"), "is not a regular file"),
    (lambda log: os.symlink("/dev/zero", log / "00000000000000000001.json"), "is not a regular file"),
    (lambda log: (log / "00000000000000000001.json").mkdir(), "is not a regular file"),
    (lambda log: os.truncate(commit(log.parent, 1), delta_log.MAX_LOG_FILE_BYTES + 1),
     f"has {delta_log.MAX_LOG_FILE_BYTES + 1:,} bytes, more than the {delta_log.MAX_LOG_FILE_BYTES:,} schemaflow reads"),
    (lambda log: (log / "00000000000000000001.json").write_bytes(b"[" * 100_000 + b"]" * 100_000),
     "is nested too deep to be Delta's"),
    (lambda log: (log / "00000000000000000001.json").write_text(f"{SECRET}\n"), "is not JSON (Expecting value: line 1"),
    (lambda log: (log / "00000000000000000001.json").write_text(f'["{SECRET}"]\n'),
     "holds a line that is not a JSON object"),
    (lambda log: (log / "_last_checkpoint").write_text('{"version": 5, "size": 3}'),
     "names in _last_checkpoint a checkpoint that is not in it"),
    (lambda log: (log / "_last_checkpoint").write_text(f'{{"version": "{SECRET}"}}'),
     "does not name a checkpoint's version"),
    (lambda log: (log / "00000000000000000002.json").write_text("{}\n"), "misses a commit after version -1"),
    (lambda log: (log / "00000000000000000001.checkpoint.parquet").write_text(SECRET),
     "is not parquet schemaflow reads (ArrowInvalid)"),
])
def test_a_hostile_file_in_the_log_is_unreadable_in_one_line_quoting_nothing(tmp_path: Path, make: Any,
                                                                             said: str) -> None:
    name_mapped(tmp_path)
    (tmp_path / "_delta_log" / "00000000000000000001.json").unlink()
    make(tmp_path / "_delta_log")
    assert said in unreadable(str(tmp_path))


def test_a_pipe_as_a_commit_is_not_waited_on(tmp_path: Path) -> None:
    # In a process of its own, so that a read that blocked would fail this test by its timeout, not hang the suite.
    name_mapped(tmp_path)
    (tmp_path / "_delta_log" / "00000000000000000001.json").unlink()
    os.mkfifo(tmp_path / "_delta_log" / "00000000000000000001.json")
    ran = subprocess.run([sys.executable, "-c", "from schemaflow.catalog.delta_log import read_delta_log, Unreadable\n"
                          f"try:\n    read_delta_log({str(tmp_path)!r})\nexcept Unreadable as e:\n    print(e)"],
                         capture_output=True, text=True, timeout=60)
    assert ran.stdout.endswith("_delta_log/00000000000000000001.json' is not a regular file\n"), ran.stderr


@pytest.mark.parametrize("actions, said", [
    ([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}], "holds no metaData action"),
    ([metadata_action([field("id", "long", 1)])], "holds no protocol action"),
    ([{"protocol": {"minReaderVersion": "one", "minWriterVersion": 2}}, metadata_action([field("id", "long", 1)])],
     "(TypeError: a field holds another kind of value than Delta's protocol gives it)"),
    ([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, metadata_action([field("id", SECRET, 1)])],
     "(ValueError: a value is not one Delta's protocol allows there)"),
    ([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
      metadata_action([field("id", {"type": "udt", "class": SECRET}, 1)])], "(ValueError: a value is not one"),
    ([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
      metadata_action([field("id", "long", 1)], ["absent"])], "(KeyError: a field Delta requires is missing)"),
    ([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
      metadata_action([field("id", "long", 1)], **{"delta.columnMapping.mode": SECRET})], "(ValueError"),
    ([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, metadata_action([field("id", "long", 1)], table_id=SECRET + "!")],
     "(ValueError"),
    ([{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [SECRET + " x"],
                    "writerFeatures": []}}, metadata_action([field("id", "long", 1)])], "(ValueError"),
    ([{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["catalogManaged"],
                    "writerFeatures": ["catalogManaged"]}}, metadata_action([field("id", "long", 1)])],
     "is managed by a catalog, which holds its latest commits"),
    ([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": {**metadata_action(
        [field("id", "long", 1)])["metaData"], "schemaString": "[" * 100_000 + "]" * 100_000}}],
     "is nested too deep to be Spark's"),
])
def test_actions_not_shaped_as_deltas_are_unreadable_in_one_line(tmp_path: Path, actions: list[dict[str, Any]],
                                                                 said: str) -> None:
    commit(tmp_path, 0, *actions)
    assert said in unreadable(str(tmp_path))


def test_a_type_nested_past_the_bound_is_unreadable(tmp_path: Path) -> None:
    nested: Any = "long"
    for _ in range(delta_log.MAX_TYPE_DEPTH + 1):
        nested = {"type": "array", "elementType": nested, "containsNull": True}
    commit(tmp_path, 0, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
           metadata_action([field("deep", nested, 1)]))
    assert "a column's type nests deeper than schemaflow reads" in unreadable(str(tmp_path))


def test_names_in_the_log_are_matched_exactly(tmp_path: Path) -> None:
    name_mapped(tmp_path)
    log = tmp_path / "_delta_log"
    (log / "00000000000000000001.json").rename(log / "00000000000000000001.json\n")
    for odd in ("00000000000000000002.json.tmp", "0000000000000000000٣.json", "00000000000000000002.crc",
                "00000000000000000000.00000000000000000002.compacted.json", "_commits"):
        (log / odd).write_text(SECRET)
    assert read_delta_log(str(tmp_path)).state.log_version == 0  # none of them is a commit
    (log / "00000000000000000000.json").rename(log / " 00000000000000000000.json")
    assert "holds no commit: it is not a Delta table's" in unreadable(str(tmp_path))


def test_a_missing_or_odd_log_is_unreadable(tmp_path: Path) -> None:
    assert "holds no _delta_log: it is not a Delta table's" in unreadable(str(tmp_path))
    (tmp_path / "_delta_log").write_text(SECRET)
    assert "the _delta_log of" in unreadable(f"file://{tmp_path}") and "is not a folder" in unreadable(str(tmp_path))
    os.symlink(tmp_path, tmp_path.parent / "link-to-table")
    (tmp_path / "_delta_log").unlink()
    (tmp_path / "_delta_log").mkdir()
    assert "holds no commit" in unreadable(str(tmp_path.parent / "link-to-table"))


def test_more_commits_after_the_checkpoint_than_the_bound_ask_for_a_checkpoint(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    write_deltalake(tmp_path, ROWS)
    for _ in range(4):
        write_deltalake(tmp_path, ROWS, mode="append")
    monkeypatch.setattr(delta_log, "MAX_COMMITS", 3)
    with pytest.raises(Unreadable) as raised:
        read_delta_log(str(tmp_path))
    assert str(raised.value) == (f"the Delta log of {str(tmp_path)!r} holds 5 commits after its last checkpoint, more "
                                 "than the 3 schemaflow reads")
    assert raised.value.advice.startswith("run a checkpoint on the table")
    DeltaTable(tmp_path).create_checkpoint()
    assert read_delta_log(str(tmp_path)).state.log_version == 4


def test_the_log_spends_the_commands_budget_file_by_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_deltalake(tmp_path, ROWS)
    for _ in range(11):
        write_deltalake(tmp_path, ROWS, mode="append")
    sizes = sum(p.stat().st_size for p in (tmp_path / "_delta_log").glob("*.json"))
    budget = MetadataBudget()
    with budget.reading("db.t") as allowance:
        read_delta_log(str(tmp_path), allowance=allowance)
    assert budget.reads[0].bytes == sizes
    small = MetadataBudget(bytes=sizes // 2)
    with pytest.raises(BudgetSpent), small.reading("db.t") as allowance:
        read_delta_log(str(tmp_path), allowance=allowance)
    assert small.reads[0].bytes <= sizes // 2
    DeltaTable(tmp_path).create_checkpoint()
    monkeypatch.setattr(delta_log, "MAX_LOG_BYTES", 100)  # the checkpoint's two columns alone hold more
    assert "holds more than the 100 bytes schemaflow reads of one table" in unreadable(str(tmp_path))


def test_without_pyarrow_a_checkpoint_asks_for_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_deltalake(tmp_path, ROWS)
    DeltaTable(tmp_path).create_checkpoint()
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(Unreadable) as raised:
        read_delta_log(str(tmp_path))
    assert "needs pyarrow: install schemaflow with its extra delta" in str(raised.value)


# The table the lead's reader builds from a snapshot, and how a metastore entry is recognised

def test_a_snapshot_becomes_a_delta_table_with_its_stamp_apart(tmp_path: Path) -> None:
    write_deltalake(tmp_path, ROWS, partition_by=["day"], description="orders",
                    configuration={"delta.appendOnly": "false"})
    DeltaTable(tmp_path).alter.set_table_properties({"schemaflow.version": "v7", "owner.team": "sales"},
                                                    raise_if_not_exists=False)
    table = delta_table("db", "orders", read_delta_log(str(tmp_path)))
    assert (table.key, table.format, table.data_source, table.comment) == ("db.orders", "delta", True, "orders")
    assert table.properties == {"delta.appendOnly": "false", "owner.team": "sales"}
    assert table.version == "v7" and table.spelt == ("Id",)
    assert table.delta is not None and table.delta.log_version == 1
    assert table.columns == (Column("id", "bigint"), Column("name", "string"))
    assert table.partition_columns == (Column("day", "string"),)


def test_a_delta_tables_log_state_is_kept_in_its_data_and_is_no_part_of_its_definition(tmp_path: Path) -> None:
    name_mapped(tmp_path)
    table = delta_table("db", "t", read_delta_log(str(tmp_path)))
    again = from_data(json.loads(json.dumps(to_data(table))))
    assert again == table and again.delta == table.delta  # a JSON snapshot of the live state keeps where the log stood
    assert fingerprint(table) == fingerprint(dataclasses.replace(table, delta=None))
    assert "delta" not in to_data(dataclasses.replace(table, delta=None))


def test_a_delta_table_is_recognised_by_its_provider_or_its_table_type_in_any_case() -> None:
    assert is_delta({"spark.sql.sources.provider": "DELTA"}) and is_delta({"spark.sql.sources.provider": "delta"})
    assert is_delta({"table_type": "DELTA"}) and is_delta({"table_type": "delta"})  # Athena's, in Glue
    assert not is_delta({"spark.sql.sources.provider": "parquet"}) and not is_delta({})
    assert not is_delta({"table_type": "ICEBERG"}) and not is_delta({"table_type": "DELTA_SHARING"})
