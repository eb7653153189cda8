"""An Iceberg table's metadata file, read as the hostile input a metastore entry can point at.

Whoever registers a table writes its ``metadata_location``. Each case here is a location another
client could register; each must end in ``Unreadable`` with a one-line reason, quickly, having read
no more than the bound and sent no request anywhere nobody configured. What Iceberg's spec allows and schemaflow does
not model (a field's default) is read past, and left on the table as it is.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.catalog import iceberg_metadata, iceberg_updates, metadata_files
from schemaflow.catalog.iceberg_metadata import MAX_METADATA_BYTES, Unreadable, iceberg_table, read_metadata
from schemaflow.catalog.hive.thrift_data import to_model
from schemaflow.model import Column


def unreadable(location: str, storage: tuple[str, ...] = ()) -> str:
    with pytest.raises(Unreadable) as raised:
        read_metadata(location, storage)
    reason = str(raised.value)
    assert "\n" not in reason
    return reason


def test_a_device_or_a_folder_is_not_read(tmp_path: Path):
    assert unreadable("/dev/zero") == "the metadata location '/dev/zero' is not a regular file"
    assert "is not a regular file" in unreadable(f"file://{tmp_path}")
    assert "cannot be opened (No such file or directory)" in unreadable(f"file:{tmp_path}/absent.json")


def test_a_pipe_is_not_waited_on(tmp_path: Path):
    # In a process of its own, so that a read that blocked would fail this test by its timeout, not hang the suite.
    fifo = tmp_path / "metadata.json"
    os.mkfifo(fifo)
    ran = subprocess.run([sys.executable, "-c", "from schemaflow.catalog.iceberg_metadata import read_metadata, Unreadable\n"
                          f"try:\n    read_metadata({str(fifo)!r})\nexcept Unreadable as e:\n    print(e)"],
                         capture_output=True, text=True, timeout=60)
    assert ran.stdout == f"the metadata location {str(fifo)!r} is not a regular file\n", ran.stderr


def test_a_file_past_the_bound_is_not_read(tmp_path: Path):
    big = tmp_path / "big.metadata.json"
    with big.open("wb") as file:
        file.truncate(MAX_METADATA_BYTES + 1)  # sparse: nothing is written, and nothing need be read
    assert unreadable(str(big)) == (f"the metadata file {str(big)!r} has {MAX_METADATA_BYTES + 1:,} bytes, more than "
                                    f"the {MAX_METADATA_BYTES:,} schemaflow reads")


@pytest.mark.parametrize("content, said", [
    (b"[1, 2]", "is not a JSON object"),
    (b"{not json", "is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    (b"[" * 200_000 + b"]" * 200_000, "is nested too deep to be Iceberg's"),
    (b"\xff\xfe", "is not JSON"),
])
def test_what_is_not_a_json_object_is_unreadable(tmp_path: Path, content: bytes, said: str):
    path = tmp_path / "m.json"
    path.write_bytes(content)
    assert said in unreadable(str(path))


@pytest.mark.parametrize("metadata", [
    {"format-version": 2},
    {"format-version": "two", "table-uuid": "u", "schemas": 5, "current-schema-id": 0},
    {"format-version": 2, "table-uuid": "u", "current-schema-id": 0, "schemas": [{"schema-id": 0, "fields": "ab"}]},
    {"format-version": 2, "table-uuid": "u", "current-schema-id": 0,
     "schemas": [{"schema-id": 0, "fields": [{"id": 1, "name": "a", "type": {"type": "nonsense"}}]}]},
    {"format-version": 2, "table-uuid": "u", "current-schema-id": 7, "schemas": [{"schema-id": 0, "fields": []}]},
])
def test_json_not_shaped_as_icebergs_metadata_is_unreadable_in_one_line(metadata):
    with pytest.raises(Unreadable) as raised:
        iceberg_table("db", "t", metadata, "/lake/db/t/metadata/1.json")
    assert str(raised.value).startswith("the metadata file '/lake/db/t/metadata/1.json' is not an Iceberg table's metadata (")
    assert "\n" not in str(raised.value)


def test_no_request_goes_to_storage_its_database_is_not_on(monkeypatch):
    asked: list[str] = []
    import pyiceberg.io

    monkeypatch.setattr(pyiceberg.io, "load_file_io", lambda properties, location: asked.append(location))
    assert unreadable("s3://attacker-bucket/m.json", ("s3://lake/warehouse/db.db",)) == (
        "the metadata file 's3://attacker-bucket/m.json' is not on the storage its database is on (s3://lake): "
        "schemaflow does not read it")
    assert "(none known)" in unreadable("s3://lake/db.db/t/m.json")
    assert asked == []


def test_a_read_from_the_databases_own_storage_is_bounded_in_time_and_bytes(monkeypatch):
    import io

    import pyiceberg.io

    asked: list[tuple[dict[str, str], str]] = []

    class Stored:
        def __init__(self, content: bytes) -> None:
            self.content = content

        def new_input(self, location: str) -> Stored:
            return self

        def open(self) -> io.BytesIO:
            return io.BytesIO(self.content)

    content = b'{"format-version": 2}'
    monkeypatch.setattr(pyiceberg.io, "load_file_io", lambda properties, location: asked.append(
        (properties, location)) or Stored(content))
    assert read_metadata("s3://lake/db.db/t/metadata/1.json", ("s3://LAKE/db.db",)) == {"format-version": 2}
    assert asked == [({"s3.connect-timeout": "10", "s3.request-timeout": "60"}, "s3://lake/db.db/t/metadata/1.json")]
    monkeypatch.setattr(iceberg_metadata, "MAX_METADATA_BYTES", 4)
    assert "has more than the 4 bytes schemaflow reads" in unreadable("s3://lake/db.db/t/m.json", ("s3://lake/db.db",))


def test_a_table_whose_metadata_is_not_read_keeps_its_mirror_and_the_reason():
    data = {"dbName": "db", "tableName": "t", "tableType": "EXTERNAL_TABLE",
            "parameters": {"table_type": "ICEBERG", "metadata_location": "/dev/zero\n# ✅ No changes"},
            "sd": {"cols": [{"name": "a", "type": "int"}]}}
    table = to_model(data, ("file:/lake/db.db",))
    assert table.iceberg is None and [c.name for c in table.columns] == ["a"]
    # Its newline shown as an escape: the reason, and what to do, reach the plan in one line.
    assert table.unreadable == ("the metadata file '/dev/zero\\n# ✅ No changes' cannot be opened "
                                "(No such file or directory); plan where the table's storage is reachable (for s3:// "
                                "or hdfs://, with pyiceberg's file IO: schemaflow's extra iceberg), and see that its "
                                "metastore entry names its own metadata file")


def test_a_metadata_file_within_its_bounds_is_read(tmp_path: Path):
    path = tmp_path / "v1.metadata.json"
    path.write_text(json.dumps({"format-version": 2}))
    assert read_metadata(f"file://{path}") == read_metadata(str(path)) == {"format-version": 2}
    assert metadata_files.authority("S3://Lake/x") == "s3://lake"


# A field's default (Iceberg spec v3, "Default values"), as another engine writes it: pyiceberg lets a v2 table take
# one, which Iceberg's Java library then refuses to load.
DEFAULTS = {
    "format-version": 2, "table-uuid": "9c1b2f4e-5a6d-4e7f-8a9b-0c1d2e3f4a5b", "location": "/lake/db/orders", "last-sequence-number": 0,
    "last-updated-ms": 1700000000000, "last-column-id": 2, "current-schema-id": 0,
    "schemas": [{"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "qty", "required": False, "type": "int", "initial-default": 1, "write-default": 0}]}],
    "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
    "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}], "properties": {},
    "current-snapshot-id": -1, "snapshots": [], "snapshot-log": [], "metadata-log": [],
}


def test_a_fields_default_is_read_and_left_as_it_is(tmp_path: Path):
    """schemaflow's model has no column default, so it makes none: a field's default is read past, and a commit that
    changes the table keeps it on its field, promoted with it."""
    location = tmp_path / "00000-a.metadata.json"
    location.write_text(json.dumps(DEFAULTS))
    table = iceberg_table("db", "orders", read_metadata(str(location)), str(location))
    assert table.columns == (Column("id", "bigint"), Column("qty", "int"))
    want = replace(table, columns=(Column("id", "bigint"), Column("qty", "bigint"), Column("note", "string")))
    updates = iceberg_updates.layout_updates(DEFAULTS, want, {"id": "id", "qty": "qty"})
    metadata = json.loads(iceberg_updates.evolved(DEFAULTS, str(location), updates, {}, [], None, "db.orders")
                          .model_dump_json())
    assert metadata["schemas"][-1]["fields"] == [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "qty", "required": False, "type": "long", "initial-default": 1, "write-default": 0},
        {"id": 3, "name": "note", "required": False, "type": "string"}]
    assert iceberg_table("db", "orders", metadata, "x").columns == want.columns
