"""Iceberg tables on the Glue backend, against moto's Glue in this process with the VersionId check of
tests/glue_versions.py, and a warehouse in a temporary folder (fast tier: no JVM, no server, no AWS account).

What it proves: an Iceberg table created, evolved (columns added, renamed, retyped, dropped; properties, partition
spec, sort order, comments) and dropped reads back as declared, from the metadata file its entry names; the entry is
the one pyiceberg's Glue catalog writes, and pyiceberg loads and commits to it; each commit is one ``UpdateTable`` at
the ``VersionId`` read with the metadata it was made on, so another writer's commit in between is a
``ConcurrentChange`` with nothing of schemaflow's landed (and its metadata file deleted). The conformance suite with
the project's table declared ``format: iceberg`` is in tests/test_backend_glue.py, beside the suite's other run.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest

from schemaflow.catalog.glue.client import GlueCatalog, GlueOptions
from schemaflow.catalog.glue.reader import GlueReader
from schemaflow.catalog.glue.writer import GlueWriter
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import (LIVE_STATE, VERSION_KEY, Column, Database, IcebergState, PartitionField, SortTerm, Table,
                              state_digest)
from tests.glue_versions import Versions, moto_aws, versioned_glue

REGION = "eu-west-1"
ACCOUNT = "123456789012"  # moto's
CLAIM = "run-1"

EVENTS = Table("lake", "events", (Column("id", "bigint", "the event"), Column("at", "timestamp"),
                                  Column("kind", "string")),
               format="iceberg", data_source=True, comment="Events",
               partition_spec=(PartitionField("day", "at"),), properties={"team": "data"})


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with moto_aws(monkeypatch):
        yield


@pytest.fixture
def glue(aws: None, tmp_path: Path) -> Iterator[tuple[GlueWriter, Versions]]:
    with versioned_glue() as seen:
        catalog = GlueCatalog(GlueOptions(region=REGION))
        writer = GlueWriter(catalog, GlueReader(catalog, str(tmp_path / "warehouse")))
        writer.add_database(Database("lake"))
        yield writer, seen


def _raw(key: str) -> dict[str, Any]:
    database, name = key.split(".")
    return dict(boto3.client("glue", region_name=REGION).get_table(DatabaseName=database, Name=name)["Table"])


def _live(writer: GlueWriter, key: str) -> Table:
    found = writer.reader.read((key.split(".")[0],)).objects[key]
    assert isinstance(found, Table)
    return found


def _state(table: Table) -> IcebergState:
    assert table.iceberg is not None
    return table.iceberg


def _outside() -> Any:
    """pyiceberg's own Glue catalog on the same (moto's) Glue: another writer."""
    from pyiceberg.catalog.glue import GlueCatalog as PyicebergGlue

    return PyicebergGlue("outside", client=boto3.client("glue", region_name=REGION))


def _metadata_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*.metadata.json"))


def test_a_table_is_created_where_the_warehouse_says_and_reads_back_as_declared(
        glue: tuple[GlueWriter, Versions], tmp_path: Path) -> None:
    writer, _ = glue
    writer.commit_iceberg(EVENTS, {}, None, True, {"team": "data", VERSION_KEY: CLAIM, "schemaflow.applied": LIVE_STATE},
                          ())
    live = _live(writer, EVENTS.key)
    assert replace(live, iceberg=None, version=None) == replace(EVENTS, properties={"format-version": "2", "team": "data"})
    assert live.version == CLAIM
    raw = _raw(EVENTS.key)
    parameters = raw["Parameters"]
    assert (parameters["table_type"], parameters[VERSION_KEY], raw["TableType"]) == ("ICEBERG", CLAIM, "EXTERNAL_TABLE")
    assert parameters["metadata_location"].startswith(str(tmp_path / "warehouse/lake.db/events/metadata/00000-"))
    assert parameters["schemaflow.applied"] == state_digest(live)
    assert raw["Description"] == "Events"
    assert [(c["Name"], c["Type"], c["Parameters"]["iceberg.field.id"]) for c in raw["StorageDescriptor"]["Columns"]] \
        == [("id", "bigint", "1"), ("at", "timestamp", "2"), ("kind", "string", "3")]
    # pyiceberg's own Glue catalog reads it as one of its tables.
    loaded = _outside().load_table(("lake", "events"))
    assert [f.name for f in loaded.schema().fields] == ["id", "at", "kind"]
    assert str(loaded.spec().fields[0].transform) == "day"
    with pytest.raises(ConcurrentChange, match=r"lake.events was modified concurrently: its schemaflow.version \(its "
                                               r"name is taken\) is 'run-1'"):
        writer.commit_iceberg(EVENTS, {}, None, True, {VERSION_KEY: "run-2"}, ())
    assert len(_metadata_files(tmp_path)) == 1  # the refused create's file deleted


def test_an_evolution_is_one_guarded_commit_with_its_stamp(glue: tuple[GlueWriter, Versions], tmp_path: Path) -> None:
    writer, seen = glue
    writer.commit_iceberg(EVENTS, {}, None, True, {"team": "data", VERSION_KEY: CLAIM}, ())
    before = _live(writer, EVENTS.key)
    assert _raw(EVENTS.key)["Parameters"]["team"] == "data"
    evolved = replace(EVENTS, columns=(Column("id", "bigint", "the id"), Column("at", "timestamp"),
                                       Column("category", "string"), Column("note", "string", "new")),
                      comment="All events", partition_spec=(PartitionField("day", "at"), PartitionField("identity", "category")),
                      sort_order=(SortTerm(PartitionField("identity", "id"), descending=True, nulls_first=False),))
    writer.commit_iceberg(evolved, {"id": "id", "at": "at", "category": "kind"}, _state(before), False,
                          {VERSION_KEY: "run-2", "schemaflow.applied": LIVE_STATE}, ["team"], CLAIM)
    live = _live(writer, EVENTS.key)
    assert replace(live, iceberg=None, version=None) == replace(evolved, properties={"format-version": "2"})
    assert live.version == "run-2"
    raw = _raw(EVENTS.key)
    assert "team" not in raw["Parameters"] and raw["Description"] == "All events"
    assert raw["Parameters"]["previous_metadata_location"] == before.iceberg.metadata_location  # type: ignore[union-attr]
    assert raw["Parameters"]["schemaflow.applied"] == state_digest(live)
    metadata = json.loads(Path(raw["Parameters"]["metadata_location"]).read_text())
    fields = {f["name"]: f["id"] for f in metadata["schemas"][-1]["fields"]}
    assert fields == {"id": 1, "at": 2, "category": 3, "note": 4}  # the rename kept its field id
    # A type widened, a column dropped, properties alone: each one UpdateTable, and the plan's stamp checked first.
    widened = replace(evolved, columns=(Column("id", "bigint", "the id"), Column("at", "timestamp"),
                                        Column("category", "string")), properties={"team": "core"})
    writer.commit_iceberg(widened, {c.name: c.name for c in widened.columns}, _state(live), False,
                          {VERSION_KEY: "run-3"}, (), "run-2")
    writer.set_parameters(EVENTS.key, {"owner_team": "core"}, ["team"], "run-3")
    live = _live(writer, EVENTS.key)
    assert [c.name for c in live.columns] == ["id", "at", "category"]
    assert live.properties == {"format-version": "2", "owner_team": "core"}
    with pytest.raises(ConcurrentChange, match="its schemaflow.version is 'run-3', this run expected 'run-0'"):
        writer.set_parameters(EVENTS.key, {"k": "v"}, (), "run-0")
    with pytest.raises(ConcurrentChange, match="Iceberg metadata"):
        writer.commit_iceberg(widened, {}, _state(before), False, {VERSION_KEY: "run-4"}, (), "run-3")
    with pytest.raises(SchemaflowError, match="lake.events is an Iceberg table in Glue: its columns, comment and "
                                              "storage change by commits of its metadata only"):
        writer.add_columns(EVENTS.key, (Column("x", "int"),), "run-3")
    assert seen.refused == 0 and len(seen.skip_archive) == 3
    assert len(_metadata_files(tmp_path)) == 4  # created, then three commits; the refused ones wrote nothing


def test_another_writers_commit_between_the_read_and_the_update_refuses_this_one(
        glue: tuple[GlueWriter, Versions], tmp_path: Path) -> None:
    writer, seen = glue
    writer.commit_iceberg(EVENTS, {}, None, True, {VERSION_KEY: CLAIM}, ())
    before = _live(writer, EVENTS.key)
    added = replace(EVENTS, columns=(*EVENTS.columns, Column("mine", "string")))
    interleaved: list[str] = []

    def another_writer(**_: Any) -> None:  # pyiceberg's Glue catalog commits between schemaflow's read and update
        if not interleaved:
            from pyiceberg.types import IntegerType

            with _outside().load_table(("lake", "events")).update_schema() as update:
                update.add_column("theirs", IntegerType())
            interleaved.append("theirs")

    client = writer.glue.client
    client.meta.events.register("before-call.glue.UpdateTable", another_writer)
    with pytest.raises(ConcurrentChange, match=r"lake.events was modified concurrently: its VersionId \(another "
                                               r"writer committed\)"):
        writer.commit_iceberg(added, {c.name: c.name for c in EVENTS.columns}, _state(before), False,
                              {VERSION_KEY: "run-2"}, (), CLAIM)
    client.meta.events.unregister("before-call.glue.UpdateTable", another_writer)
    assert seen.refused == 1
    live = _live(writer, EVENTS.key)
    assert [c.name for c in live.columns] == ["id", "at", "kind", "theirs"] and live.version == CLAIM
    assert len(_metadata_files(tmp_path)) == 2  # the first, the other writer's: the refused commit's file deleted
    # Planned again on what the other writer left, the commit lands, keeping their column's field id.
    writer.commit_iceberg(replace(added, columns=(*live.columns, Column("mine", "string"))),
                          {c.name: c.name for c in live.columns}, _state(live), False, {VERSION_KEY: "run-2"}, (),
                          CLAIM)
    assert [c.name for c in _live(writer, EVENTS.key).columns] == ["id", "at", "kind", "theirs", "mine"]


def test_a_drop_checks_the_metadatas_stamp_and_keeps_the_files(glue: tuple[GlueWriter, Versions],
                                                                tmp_path: Path) -> None:
    writer, _ = glue
    writer.commit_iceberg(EVENTS, {}, None, True, {VERSION_KEY: CLAIM}, ())
    writer.check_guards(EVENTS.key)
    held = _raw(EVENTS.key)
    with pytest.raises(ConcurrentChange, match="its schemaflow.version is 'run-1', this run expected 'run-0'"):
        writer.drop_table(EVENTS.key, "run-0")
    assert _raw(EVENTS.key)["VersionId"] == held["VersionId"]
    writer.drop_table(EVENTS.key, CLAIM)
    assert EVENTS.key not in writer.reader.read(("lake",)).objects
    assert len(_metadata_files(tmp_path)) == 1


def test_what_an_iceberg_table_on_glue_cannot_be_given_is_refused(aws: None, tmp_path: Path) -> None:
    with versioned_glue():
        catalog = GlueCatalog(GlueOptions(region=REGION))
        writer = GlueWriter(catalog, GlueReader(catalog))  # no warehouse
        writer.add_database(Database("lake"))
        with pytest.raises(SchemaflowError, match="lake.events: an Iceberg table needs a place for its files: declare "
                                                  "its location, give its database a location, or set "
                                                  "metastore.warehouse; nothing was created"):
            writer.commit_iceberg(EVENTS, {}, None, True, {VERSION_KEY: CLAIM}, ())
        with pytest.raises(SchemaflowError, match="would go to 's3://elsewhere/events/metadata/.*is not on the storage "
                                                  "its database is on"):
            writer.commit_iceberg(replace(EVENTS, location="s3://elsewhere/events"), {}, None, True,
                                  {VERSION_KEY: CLAIM}, ())
        with pytest.raises(SchemaflowError, match="not converted to Iceberg in place in Glue"):
            writer.commit_iceberg(EVENTS, {}, None, True, {VERSION_KEY: CLAIM}, (), None, backup="lake.events_old")
        assert writer.reader.read(("lake",)).objects == {}
