"""The Glue backend's reader and writer against moto's Glue in this process, with the VersionId check moto lacks
added by tests/glue_versions.py (fast tier: no JVM, no server, no AWS account).

What it proves: each kind of table written reads back as declared; every table write is a compare-and-swap on the
table's VersionId, so a writer that changes the table between schemaflow's read and its update, or a stamp other than
the plan's, is a ``ConcurrentChange`` with nothing changed; a cascade rewrites partitions in batches of at most 100;
``check_guards`` refuses plain moto and passes with the layer. The conformance suite runs twice: with the project's
table a Parquet data-source table, and an Iceberg table (whose other writer is pyiceberg's own Glue catalog).
"""
from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from schemaflow.catalog.backend import LiveEntry
from schemaflow.catalog.live import Live
from schemaflow.catalog.glue.client import GlueCatalog, GlueOptions
from schemaflow.catalog.glue.reader import GlueReader
from schemaflow.catalog.glue.writer import GlueWriter
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import LIVE_STATE, VERSION_KEY, Bucketing, Column, Database, Table, View, state_digest
from schemaflow.project import Project, Settings
from schemaflow.testing import BackendSuite, Harness
from tests.glue_versions import Versions, moto_aws, versioned_glue

REGION = "eu-west-1"
ACCOUNT = "123456789012"  # moto's
CLAIM = "run-1"
DOCS = Path(__file__).parent.parent / "docs" / "backends" / "glue.md"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with moto_aws(monkeypatch):
        yield


def _writer(**options: Any) -> GlueWriter:
    glue = GlueCatalog(GlueOptions(region=REGION, **options))
    writer = GlueWriter(glue, GlueReader(glue))
    writer.add_database(Database("retail", "Shop data", "s3://lake/retail", {"team": "shop"}))
    return writer


@pytest.fixture
def glue(aws: None) -> Iterator[tuple[GlueWriter, Versions]]:
    with versioned_glue() as seen:
        yield _writer(), seen


TABLES = (
    Table("retail", "orders", (Column("id", "bigint", "the order"), Column("note", "varchar(10)")),
          (Column("ds", "string", "day"),), comment="Orders"),
    Table("retail", "lines", (Column("id", "bigint"), Column("text", "string")), format="textfile",
          serde_properties={"field.delim": "|", "serialization.null.format": ""}, external=True,
          location="s3://lake/raw/lines"),
    Table("retail", "events", (Column("id", "bigint"), Column("tags", "map<string,array<int>>", "tags")),
          (Column("day", "date"),), format="parquet", data_source=True, comment="Events"),
    Table("retail", "feed", (Column("id", "bigint"), Column("name", "string")), format="csv", data_source=True,
          external=True, location="s3://lake/feed", serde_properties={"header": "true"}),
    Table("retail", "buckets", (Column("id", "bigint"), Column("at", "timestamp")), format="orc",
          bucketing=Bucketing(("id",), 8, ("at",))),
)


def _live(writer: GlueWriter, key: str) -> Table:
    found = writer.reader.read(("retail",)).objects[key]
    assert isinstance(found, Table)
    return found


def _version(key: str) -> str:
    database, name = key.split(".")
    return str(boto3.client("glue", region_name=REGION).get_table(DatabaseName=database, Name=name)["Table"]["VersionId"])


def test_each_kind_of_table_reads_back_as_written(glue: tuple[GlueWriter, Versions]) -> None:
    writer, _ = glue
    for table in TABLES:
        writer.create_table(table, CLAIM)
    catalog = writer.reader.read(("retail", "absent"))
    assert catalog.databases == ("retail",)
    assert catalog.objects == {t.key: t for t in TABLES}
    assert {o.version for o in catalog.objects.values()} == {CLAIM}
    assert catalog.database_details["retail"] == Database("retail", "Shop data", "s3://lake/retail", {"team": "shop"})
    entries = {e.object.key: e for e in writer.reader.entries("retail")}
    assert isinstance(entries["retail.orders"], LiveEntry)
    assert entries["retail.orders"].parameters[VERSION_KEY] == CLAIM
    assert entries["retail.events"].parameters["spark.sql.sources.provider"] == "parquet"
    raw = boto3.client("glue", region_name=REGION).get_table(DatabaseName="retail", Name="orders")["Table"]
    assert raw["Description"] == "Orders"  # the comment, mirrored where Glue's console shows it
    assert raw["StorageDescriptor"]["Location"] == "s3://lake/retail/orders"  # a managed table: its database's folder
    with pytest.raises(ConcurrentChange, match=r"retail.orders was modified concurrently: its schemaflow.version \(its name is taken\) is 'run-1'"):
        writer.create_table(TABLES[0], "run-2")
    assert writer.reader.views(["retail.orders", "retail.none"]) == {"retail.orders": None, "retail.none": None}
    assert writer.endpoint == f"glue:{REGION}:{ACCOUNT}"


def test_each_change_lands_in_one_guarded_update(aws: None) -> None:
    with versioned_glue() as seen:
        writer = _writer(skip_archive=True)
        orders, events = TABLES[0], TABLES[2]
        for table in (orders, events):
            writer.create_table(table, CLAIM)
        added = (Column("coupon", "string", "a code"),)
        writer.add_columns(orders.key, added, CLAIM)
        writer.add_columns(events.key, added, CLAIM)
        writer.set_table_comment(orders.key, "All orders", CLAIM)
        writer.set_column_comments(events.key, (Column("tags", "map<string,array<int>>", None),
                                                Column("day", "date", "the day")), CLAIM)
        writer.set_storage(orders.key, {"parquet.compression": "zstd"}, None, CLAIM)
        writer.set_parameters(orders.key, {"owner_team": "shop"}, [], CLAIM)
        writer.set_parameters(orders.key, {"schemaflow.applied": LIVE_STATE, "k": "v"}, ["owner_team"], CLAIM)
        writer.set_columns(orders.key, (Column("id", "bigint", "the order"), Column("note", "varchar(20)")),
                           orders.partition_columns, cascade=False, batched=True, parameters={"x": "y"},
                           expected=CLAIM)
    live_orders, live_events = _live(writer, orders.key), _live(writer, events.key)
    # A data-source table's columns live in Spark's copy of the schema, rewritten in each update.
    assert live_events == replace(events, columns=(events.columns[0], Column("tags", "map<string,array<int>>"),
                                                   *added), partition_columns=(Column("day", "date", "the day"),))
    assert live_orders == replace(orders, columns=(Column("id", "bigint", "the order"), Column("note", "varchar(20)")),
                                  comment="All orders", properties={"k": "v", "x": "y"},
                                  serde_properties={"parquet.compression": "zstd"})
    database, name = orders.key.split(".")
    parameters = boto3.client("glue", region_name=REGION).get_table(DatabaseName=database, Name=name)["Table"]["Parameters"]
    before_digest = replace(live_orders, columns=orders.columns + added)  # the state the parameters write left
    assert parameters["schemaflow.applied"] == state_digest(replace(before_digest, properties={"k": "v"}))
    assert seen.refused == 0
    assert [s for _, _, s in seen.skip_archive] == [True] * 8


def test_a_concurrent_writer_or_a_stale_stamp_changes_nothing(glue: tuple[GlueWriter, Versions]) -> None:
    writer, seen = glue
    orders = TABLES[0]
    writer.create_table(orders, CLAIM)
    other = boto3.client("glue", region_name=REGION)
    writer_client = writer.glue.client
    interleaved: list[str] = []

    def another_writer(**_: Any) -> None:  # between schemaflow's GetTable and its UpdateTable
        if not interleaved:
            table = other.get_table(DatabaseName="retail", Name="orders")["Table"]
            entry = {k: table[k] for k in ("Name", "StorageDescriptor", "PartitionKeys", "TableType", "Parameters")}
            entry["StorageDescriptor"]["Columns"].append({"Name": "theirs", "Type": "int"})
            other.update_table(DatabaseName="retail", TableInput=entry, VersionId=table["VersionId"])
            interleaved.append(table["VersionId"])

    writer_client.meta.events.register("before-call.glue.UpdateTable", another_writer)
    with pytest.raises(ConcurrentChange, match="retail.orders was modified concurrently: its VersionId"):
        writer.add_columns(orders.key, (Column("mine", "string"),), CLAIM)
    writer_client.meta.events.unregister("before-call.glue.UpdateTable", another_writer)
    assert [c.name for c in _live(writer, orders.key).columns] == ["id", "note", "theirs"]  # theirs kept, mine not
    assert seen.refused == 1
    held = _version(orders.key)
    for write in (lambda: writer.add_columns(orders.key, (Column("mine", "string"),), "run-0"),
                  lambda: writer.set_parameters(orders.key, {"k": "v"}, [], "run-0"),
                  lambda: writer.set_table_comment(orders.key, None, "run-0"),
                  lambda: writer.drop_table(orders.key, "run-0")):
        with pytest.raises(ConcurrentChange, match="its schemaflow.version is 'run-1', this run expected 'run-0'"):
            write()
    assert _version(orders.key) == held  # nothing written
    writer.drop_table(orders.key, CLAIM)
    assert "retail.orders" not in writer.reader.read(("retail",)).objects


def test_a_cascade_rewrites_partitions_in_batches_of_100(glue: tuple[GlueWriter, Versions]) -> None:
    writer, _ = glue
    orders = TABLES[0]
    writer.create_table(orders, CLAIM)
    client = boto3.client("glue", region_name=REGION)
    storage = client.get_table(DatabaseName="retail", Name="orders")["Table"]["StorageDescriptor"]
    for start in range(0, 250, 100):
        client.batch_create_partition(DatabaseName="retail", TableName="orders", PartitionInputList=[
            {"Values": [f"2026-01-{day:03d}"], "StorageDescriptor": {**storage, "Location": f"s3://p/{day}"}}
            for day in range(start, min(start + 100, 250))])
    calls: list[int] = []
    writer.glue.client.meta.events.register("provide-client-params.glue.BatchUpdatePartition",
                                            lambda params, **_: calls.append(len(params["Entries"])))
    wanted = (*orders.columns, Column("coupon", "string"))
    writer.set_columns(orders.key, wanted, orders.partition_columns, cascade=True, batched=True, expected=CLAIM)
    assert calls == [100, 100, 50]
    partitions = writer.reader.partitions(orders.key, columns=True)
    assert {tuple(c["Name"] for c in p["StorageDescriptor"]["Columns"]) for p in partitions} == {
        ("id", "note", "coupon")}
    assert writer.cascade_in_batches(orders.key, wanted) == 0  # a rerun finds nothing stale
    assert writer.reader.count_partitions(orders.key) == 250
    assert writer.reader.partition_values(orders.key)[0] == ("2026-01-000",)
    assert len(writer.reader.data_folders(orders.key)) == 250


def test_check_guards_refuses_plain_moto_and_passes_with_the_layer(aws: None) -> None:
    writer = _writer()
    writer.create_table(TABLES[0], CLAIM)
    with pytest.raises(SchemaflowError, match="took an UpdateTable of retail.orders at VersionId .*: its writes are "
                                              "not guarded"):
        writer.check_guards(TABLES[0].key)
    with versioned_glue():
        writer.check_guards(TABLES[0].key)


def test_views_and_what_glue_cannot_hold_are_refused(glue: tuple[GlueWriter, Versions]) -> None:
    writer, _ = glue
    view = View("retail", "recent", "SELECT 1 AS one")
    with pytest.raises(SchemaflowError, match="retail.recent: the glue backend does not write views"):
        writer.create_view(view, False, CLAIM)
    with pytest.raises(SchemaflowError, match="retail.ice: iceberg tables are made by a commit of their own metadata"):
        writer.create_table(Table("retail", "ice", (Column("id", "bigint"),), format="iceberg", data_source=True),
                            CLAIM)
    writer.create_table(TABLES[2], CLAIM)
    with pytest.raises(SchemaflowError, match="is a Spark data-source table"):
        writer.set_columns(TABLES[2].key, TABLES[2].columns[:1], TABLES[2].partition_columns, False, True, {}, CLAIM)
    assert writer.after_apply(["retail.events"]) == []


def test_the_backend_is_registered_and_connects_nothing_until_asked(aws: None, tmp_path: Path) -> None:
    # The settings docs/backends/glue.md shows (its one yaml block), as the backend reads them.
    [example] = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), flags=re.S)
    declared = yaml.safe_load(example)
    options = declared["metastore"]["options"]
    assert (options["region"], options["catalog_id"], options["skip_archive"]) == (REGION, ACCOUNT, False)
    del options["endpoint"]  # AWS's own: moto answers in this process at boto3's default endpoint
    project = Project(tmp_path, Settings(metastore_type="glue", metastore_options=options, declared=declared))
    backend = Live(project, progress=io.StringIO()).backend  # Live registers the built-in backends
    assert backend.where() == f"the Glue Data Catalog in {REGION} of account {ACCOUNT}"
    assert backend.glue._client is None  # type: ignore[attr-defined]
    assert backend.reader.endpoint == f"glue:{REGION}:{ACCOUNT}"
    wrong = Project(tmp_path, Settings(metastore_type="glue", metastore_options={"aws_secret_access_key": "x"}))
    with pytest.raises(SchemaflowError, match="metastore.options.aws_secret_access_key is no option of the glue "
                                              "backend; its options are region, catalog_id, endpoint, skip_archive"):
        Live(wrong, progress=io.StringIO())


def _glue_project(root: Path, table_format: str) -> None:
    (root / "schemas" / "retail").mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(
        f"databases: [retail]\nmetastore: {{type: glue, options: {{region: {REGION}, catalog_id: '{ACCOUNT}'}}}}\n")
    (root / "schemas" / "retail" / "lines.yaml").write_text(
        f"table: retail.lines\nformat: {table_format}\ncolumns:\n  - {{name: id, type: bigint}}\n"
        "  - {name: text, type: string}\n")


def _cli(root: Path, *argv: str) -> tuple[int, str, str]:
    from schemaflow.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--project", str(root), *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.usefixtures("served")
def test_a_change_that_needs_a_rewrite_is_blocked_at_plan_and_a_restore_refused(tmp_path: Path) -> None:
    _glue_project(tmp_path, "textfile")
    assert _cli(tmp_path, "apply", "--auto-approve")[0] == 0
    version = _version("retail.lines")
    _glue_project(tmp_path, "parquet")  # another format: only a rewrite makes it, and Glue renames no tables
    for allowed in ((), ("--allow-destructive",)):
        code, out, _ = _cli(tmp_path, "plan", *allowed)
        assert code == 1, out
        assert ("storage (format 'textfile' -> 'parquet') needs a rewrite, and the Glue Data Catalog renames no "
                "tables, so schemaflow cannot rewrite retail.lines there (metastore.type glue;") in " ".join(out.split())
        assert "rewrite table" not in out
        code, _, err = _cli(tmp_path, "apply", "--auto-approve", *allowed)
        assert code == 1 and "the plan has 1 blocked step; nothing was applied" in err, err
    assert _version("retail.lines") == version  # not one UpdateTable
    code, out, err = _cli(tmp_path, "restore", "retail.lines", "--auto-approve")
    assert (code, out, err) == (1, "", "error: retail.lines: the Glue Data Catalog (metastore.type glue) renames no "
                                       "tables, so schemaflow restores no table there (a restore swaps the backup in "
                                       "by renaming): nor does it rewrite one there, so there is no backup to restore. "
                                       "Nothing was restored\n")
def test_a_plan_reads_glue_ahead_while_it_parses_the_files_and_takes_that_read(glue: tuple[GlueWriter, Versions],
                                                                               tmp_path: Path) -> None:
    writer, _ = glue
    writer.create_table(TABLES[0], CLAIM)
    project = Project(tmp_path, Settings(metastore_type="glue", metastore_options={"region": REGION}))
    live = Live(project, progress=io.StringIO())
    threads: set[str] = set()
    reader = live.reader
    listed = reader.table_data

    def table_data(database: str) -> Iterator[dict[str, Any]]:
        threads.add(threading.current_thread().name)
        return listed(database)

    reader.table_data = table_data  # type: ignore[method-assign]
    live.read_ahead(("retail",))
    read = live.read(("retail",))
    assert threads == {"catalog-read"}  # read in the background, once: the plan's read took it
    assert read == writer.reader.read(("retail",)) and list(read.objects) == [TABLES[0].key]


class GlueHarness(Harness):
    """The conformance suite's view of moto's Glue in this process, with the tests' VersionId layer."""

    name = "glue"

    def metastore(self, root: Path) -> dict[str, Any]:
        return {"type": self.name, "options": {"region": REGION, "catalog_id": ACCOUNT}}

    def change_outside(self, root: Path, key: str, column: Column) -> None:
        client = boto3.client("glue", region_name=REGION)
        database, name = key.split(".")
        table = client.get_table(DatabaseName=database, Name=name)["Table"]
        kept = ("Name", "Description", "StorageDescriptor", "PartitionKeys", "TableType", "Parameters")
        entry = {k: v for k, v in table.items() if k in kept}
        entry["StorageDescriptor"]["Columns"].append({"Name": column.name, "Type": column.type})
        client.update_table(DatabaseName=database, TableInput=entry)


@pytest.fixture
def served(aws: None) -> Iterator[None]:
    """moto's Glue with the VersionId layer, for the suite's commands run in this process."""
    with versioned_glue():
        yield


@pytest.mark.usefixtures("served")
class TestGlueSuite(BackendSuite):
    harness = GlueHarness()


class GlueIcebergHarness(Harness):
    """The conformance suite on moto's Glue (with the tests' VersionId layer), its table an Iceberg table whose files
    go to a warehouse in the project's folder; another writer is pyiceberg's own Glue catalog."""

    name = "glue"
    table_format = "iceberg"

    def metastore(self, root: Path) -> dict[str, Any]:
        return {"type": self.name, "warehouse": str(root / "warehouse"),
                "options": {"region": REGION, "catalog_id": ACCOUNT}}

    def change_outside(self, root: Path, key: str, column: Column) -> None:
        from pyiceberg.catalog.glue import GlueCatalog as PyicebergGlue
        from pyiceberg.types import StringType

        assert column.type == "string"
        outside = PyicebergGlue("outside", client=boto3.client("glue", region_name=REGION))
        with outside.load_table(tuple(key.split("."))).update_schema() as update:
            update.add_column(column.name, StringType())


@pytest.mark.usefixtures("served")
class TestGlueIcebergSuite(BackendSuite):
    harness = GlueIcebergHarness()


def _tables_project(root: Path, comment: str) -> None:
    (root / "schemas" / "retail").mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(
        f"databases: [retail]\nmetastore: {{type: glue, options: {{region: {REGION}, catalog_id: '{ACCOUNT}'}}}}\n")
    for n in range(6):
        (root / "schemas" / "retail" / f"t{n}.yaml").write_text(
            f"table: retail.t{n}\nusing: parquet\ncomment: {comment}\ncolumns:\n  - {{name: id, type: bigint}}\n")


def _stamps() -> dict[str, str]:
    client = boto3.client("glue", region_name=REGION)
    return {f"t{n}": client.get_table(DatabaseName="retail", Name=f"t{n}")["Table"]["Parameters"]["schemaflow.version"]
            for n in range(6)}


@pytest.mark.usefixtures("served")
def test_claims_after_the_first_are_taken_side_by_side_and_all_handed_back_when_one_is_refused(tmp_path: Path) -> None:
    _tables_project(tmp_path, "first")
    assert _cli(tmp_path, "apply", "--auto-approve")[0] == 0
    before = _stamps()
    claiming: list[str] = []  # the thread of each UpdateTable
    boto3.DEFAULT_SESSION = None
    boto3.setup_default_session()
    boto3.DEFAULT_SESSION.events.register(  # type: ignore[union-attr]
        "before-call.glue.UpdateTable", lambda **_: claiming.append(threading.current_thread().name))
    try:
        _tables_project(tmp_path, "second")
        assert _cli(tmp_path, "plan", "--out", str(tmp_path / "plan.json"))[0] == 2
        # Another writer stamps t4 after the plan: its claim is refused, and every claim taken is handed back.
        client = boto3.client("glue", region_name=REGION)
        found = client.get_table(DatabaseName="retail", Name="t4")["Table"]
        entry = {k: v for k, v in found.items() if k in ("Name", "StorageDescriptor", "PartitionKeys", "TableType",
                                                            "Parameters", "Description")}
        client.update_table(DatabaseName="retail", TableInput={
            **entry, "Parameters": {**entry["Parameters"], "schemaflow.version": "another-writer"}})
        claiming.clear()
        code, _, err = _cli(tmp_path, "apply", str(tmp_path / "plan.json"), "--auto-approve")
        assert code == 1 and "nothing was applied" in err, err
        assert _stamps() == {**before, "t4": "another-writer"}  # no claim kept, no change made
        assert len(set(claiming)) > 1  # the claims after the first ran in more than one thread
        assert len(claiming) >= 2 * 5  # five claims taken or tried, and the four taken handed back
    finally:
        boto3.DEFAULT_SESSION = None
