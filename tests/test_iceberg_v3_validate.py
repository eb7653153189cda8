"""Iceberg format version 3, which schemaflow's writer (pyiceberg 0.12) does not write, with no JVM: declaring it
is refused at validate with where and what to do; a live version 3 table is left alone by the plan with one line,
declared or not, and its import writes no file; a commit to one made so since the plan writes nothing; and the
versions refused are those the installed pyiceberg does not write."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest

from schemaflow.catalog.hive import iceberg_commit
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, Column, IcebergState, PartitionField, Table
from schemaflow.plan.plan import PlanBuilder
from schemaflow.scope import Scope
from schemaflow.spec.iceberg import WRITTEN_VERSIONS
from tests.projects import schemaflow

FILE = """\
table: lake.events
format: iceberg
columns:
  - {{name: id, type: bigint}}
partitioned_by: ['bucket(4, id)']
properties: {{format-version: '{version}'}}
"""
STATE = IcebergState("9f1c-uuid", 0, 0, 0, 3, "file:/lake/events/metadata/00001-a.metadata.json")
LIVE = Table("lake", "events", (Column("id", "bigint"),), format="iceberg", data_source=True,
             properties={"format-version": "3"}, partition_spec=(PartitionField("bucket", "id", 4),), iceberg=STATE)
REASON = ("an Iceberg table of format version 3, and schemaflow's writer (pyiceberg 0.12) writes Iceberg format "
          "versions 1 and 2 only")


def _project(tmp_path: Path, version: str) -> Path:
    (tmp_path / "schemas" / "lake").mkdir(parents=True)
    (tmp_path / "schemas" / "lake" / "events.yaml").write_text(FILE.format(version=version))
    (tmp_path / "schemaflow.yaml").write_text("databases: [lake]\n")
    return tmp_path


def test_declaring_format_version_3_is_refused_at_validate_with_where_and_what_to_do(tmp_path: Path) -> None:
    refused = schemaflow(_project(tmp_path / "v3", "3"), "validate")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        "schemas/lake/events.yaml:6:30: format version 3 is Iceberg's, but schemaflow's writer (pyiceberg 0.12) writes "
        "Iceberg format versions 1 and 2 only: declare format-version: '2'; a version 3 table another engine made is "
        "read and left alone when its file declares no format-version\n"
        "1 problem found; nothing was planned or applied.\n")
    accepted = schemaflow(_project(tmp_path / "v2", "2"), "validate")
    assert accepted.returncode == 0, accepted.stderr


@pytest.mark.parametrize("version", [2, 3])
def test_a_declared_live_version_3_table_is_left_alone_with_one_line(version: int) -> None:
    live = replace(LIVE, iceberg=replace(STATE, format_version=version), properties={"format-version": str(version)})
    want = replace(live, iceberg=None, comment="Made by Spark", columns=(Column("id", "bigint"), Column("more", "int")),
                   properties={})
    plan = PlanBuilder(Catalog(("lake",), {want.key: want}), Catalog(("lake",), {live.key: live})).build()
    if version == 2:  # what the same declaration makes of a table schemaflow writes
        assert [s.summary for s in plan.steps] == [
            "alter Iceberg table lake.events: add more int; change the table's comment"]
        return
    assert plan.steps == () and plan.is_empty
    assert plan.warnings == (f"left alone: lake.events is {REASON}; schemaflow reads it and changes nothing of it, "
                             "whatever its file says",)


def test_an_undeclared_one_is_not_managed_nor_imported_even_once_schemaflow_stamped_it() -> None:
    stamped = replace(LIVE, version="v1")  # schemaflow's own, before another engine upgraded it
    kept, notices = Scope().owned(Catalog(("lake",), {LIVE.key: stamped}), Catalog(("lake",)))
    assert kept.objects == {}
    assert notices == (f"not managed: lake.events ({REASON}); schemaflow leaves it alone",)
    assert not Scope().adopts(LIVE) and Scope().adopts(replace(LIVE, iceberg=replace(STATE, format_version=2)))


def test_a_commit_to_a_table_made_version_3_since_the_plan_writes_nothing(tmp_path: Path) -> None:
    metadata = {"format-version": 3, "table-uuid": "9f1c-uuid", "location": str(tmp_path), "last-column-id": 1,
                "current-schema-id": 0, "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                    {"id": 1, "name": "id", "required": False, "type": "long"}]}],
                "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
                "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}], "properties": {}}
    location = tmp_path / "metadata" / "00001-a.metadata.json"
    location.parent.mkdir()
    location.write_text(json.dumps(metadata))
    hms = mock.Mock()
    hms.getParameters.return_value = {"table_type": "ICEBERG", "metadata_location": str(location)}
    client = mock.Mock()
    client.msc.getDatabase.return_value.getLocationUri.return_value = str(tmp_path)
    with pytest.raises(SchemaflowError, match=re.escape(
            f"lake.events is {REASON}: plan again; nothing was committed")):
        iceberg_commit._commit_once(client, "lake.events", None, {}, None, {"schemaflow.version": "v2"}, (), None, hms)
    assert [p.name for p in location.parent.iterdir()] == ["00001-a.metadata.json"]
    client.alter.assert_not_called()


def test_the_versions_written_are_those_the_installed_pyiceberg_writes(tmp_path: Path) -> None:
    # Measured on the writer itself: when pyiceberg writes version 3, this says to stop refusing it.
    written, refused = [], []
    for version in ("1", "2", "3"):
        table = replace(LIVE, iceberg=None, properties={"format-version": version})
        metadata = iceberg_commit.first_metadata(table, str(tmp_path), {"format-version": version})
        try:
            metadata.model_dump_json()
            written.append(version)
        except NotImplementedError as error:
            refused.append(str(error))
    assert tuple(written) == WRITTEN_VERSIONS == ("1", "2")
    assert refused == ["Writing V3 is not yet supported, see: https://github.com/apache/iceberg-python/issues/1551"]
