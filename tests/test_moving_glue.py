"""A project moved between two Glue Data Catalogs (two regions of moto's Glue, with the tests' VersionId layer): the
plan registers each Iceberg table by its metadata file (``GlueWriter.register_table``: one ``CreateTable`` of the entry
pyiceberg's Glue catalog writes), apply lands them with the same snapshot and rows as pyiceberg reads them, the next
plan is empty, the old entries stay; a name taken in the new catalog between plan and apply is a concurrent change.
No JVM: the whole move runs through the commands on moto."""
from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest

from schemaflow.catalog.glue.client import GlueCatalog, GlueOptions
from schemaflow.catalog.glue.reader import GlueReader
from schemaflow.catalog.glue.writer import GlueWriter
from schemaflow.cli import main
from schemaflow.errors import ConcurrentChange
from tests.glue_versions import moto_aws, versioned_glue

OLD, NEW = "us-east-1", "eu-west-1"
ACCOUNT = "123456789012"  # moto's


@pytest.fixture
def glue(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with moto_aws(monkeypatch), versioned_glue():
        yield


def _pyiceberg(region: str) -> Any:
    from pyiceberg.catalog.glue import GlueCatalog

    return GlueCatalog(region, client=boto3.client("glue", region_name=region))


def _run(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--project", str(root), *argv])
    return code, out.getvalue(), err.getvalue()


def _project(root: Path, settings: str) -> None:
    (root / "schemas" / "lake").mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(settings)
    for name in ("clicks", "orders"):
        (root / "schemas" / "lake" / f"{name}.yaml").write_text(
            f"table: lake.{name}\nformat: iceberg\ncolumns:\n  - {{name: id, type: bigint}}\n  - {{name: v, type: int}}\n")


def _glue(region: str, warehouse: Path) -> str:
    return f"{{type: glue, warehouse: 'file://{warehouse}', options: {{region: {region}, catalog_id: '{ACCOUNT}'}}}}"


@pytest.mark.usefixtures("glue")
def test_iceberg_tables_move_between_glue_catalogs_by_their_metadata_files(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    _project(tmp_path / "old", f"databases: [lake]\nmetastore: {_glue(OLD, warehouse)}\n")
    assert _run(tmp_path / "old", "apply", "--auto-approve")[0] == 0
    old = _pyiceberg(OLD)
    clicks = old.load_table("lake.clicks")
    clicks.append(pa.Table.from_pylist([{"id": 1, "v": 5}, {"id": 2, "v": 20}], schema=clicks.schema().as_arrow()))
    clicks = old.load_table("lake.clicks")

    moving = f"{_glue(NEW, warehouse)[:-1]}, moving_from: {_glue(OLD, warehouse)}}}"
    _project(tmp_path / "new", f"databases: [lake]\nmetastore: {moving}\n")
    code, planned, _ = _run(tmp_path / "new", "plan")
    assert code == 2, planned
    said = " ".join(planned.split())
    for name in ("clicks", "orders"):
        assert f"register Iceberg table lake.{name} from the Glue Data Catalog moved from" in said, said
    assert ("-- glue: register table lake.clicks (glue:CreateTable naming the metadata file, the entry pyiceberg's "
            f"Glue catalog writes, refused where the name is taken) -- metadata file "
            f"'{clicks.metadata_location}'") in said
    code, _, err = _run(tmp_path / "new", "apply", "--auto-approve")
    assert code == 0, err

    moved = _pyiceberg(NEW).load_table("lake.clicks")
    # Adopted, not copied: the file registered is in the history of the one the step's stamp committed after it.
    assert clicks.metadata_location in [entry.metadata_file for entry in moved.metadata.metadata_log]
    assert moved.metadata.current_snapshot_id == clicks.metadata.current_snapshot_id
    assert sorted(moved.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": 5}, {"id": 2, "v": 20}]
    assert "No changes" in _run(tmp_path / "new", "plan")[1]
    assert sorted(t[1] for t in old.list_tables("lake")) == ["clicks", "orders"]  # the old entries stay


@pytest.mark.usefixtures("glue")
def test_a_name_taken_in_the_new_glue_catalog_is_refused_as_a_concurrent_change(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    _project(tmp_path / "old", f"databases: [lake]\nmetastore: {_glue(OLD, warehouse)}\n")
    assert _run(tmp_path / "old", "apply", "--auto-approve")[0] == 0
    moving = f"{_glue(NEW, warehouse)[:-1]}, moving_from: {_glue(OLD, warehouse)}}}"
    _project(tmp_path / "new", f"databases: [lake]\nmetastore: {moving}\n")
    new = boto3.client("glue", region_name=NEW)
    new.create_database(DatabaseInput={"Name": "lake"})
    assert _run(tmp_path / "new", "plan", "--out", str(tmp_path / "plan.json"))[0] == 2
    new.create_table(DatabaseName="lake", TableInput={"Name": "orders"})  # another writer, after the plan
    code, _, err = _run(tmp_path / "new", "apply", str(tmp_path / "plan.json"), "--auto-approve")
    assert code == 1 and "lake.orders: created since the plan was made" in err and "nothing was applied" in err, err
    assert [t["Name"] for t in new.get_tables(DatabaseName="lake")["TableList"]] == ["orders"]  # nothing registered

    # Taken between that check and the register itself: the CreateTable is refused, as a concurrent change.
    writer = GlueWriter(*_catalog_and_reader(warehouse))
    location = _pyiceberg(OLD).load_table("lake.clicks").metadata_location
    new.create_table(DatabaseName="lake", TableInput={"Name": "clicks"})
    with pytest.raises(ConcurrentChange, match="a table registered or created by another writer"):
        writer.register_table("lake.clicks", location)
    assert new.get_table(DatabaseName="lake", Name="clicks")["Table"].get("Parameters", {}).get(
        "metadata_location") is None  # the other writer's entry, untouched


def _catalog_and_reader(warehouse: Path) -> tuple[GlueCatalog, GlueReader]:
    catalog = GlueCatalog(GlueOptions(region=NEW))
    return catalog, GlueReader(catalog, f"file://{warehouse}")
