"""An Iceberg table on a standalone metastore server (Derby and PostgreSQL), as a user runs schemaflow: applied
through Spark's client, then planned again with no JVM, its live state read from its own metadata file."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from schemaflow.catalog.iceberg_metadata import read_metadata
from schemaflow.claims import parse_claim
from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.model import Table
from tests import iceberg_java
from tests.metastore_server import BACKENDS, default_backend, metastore_setting, one_backend, other_client
from tests.conversions import filled, on_server
from tests.projects import live_state, paused, schemaflow

pytestmark = pytest.mark.remote

CLICKS = """\
table: ice_db.clicks
format: iceberg
columns:
  - {name: ts, type: timestamp}
  - {name: id, type: bigint}
  - {name: v, type: int}
partitioned_by: [day(ts), bucket(8, id)]
sorted_by: [id]
"""


@pytest.fixture(params=BACKENDS)
def server(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("metastore_server" if request.param == "derby" else "postgres_metastore_server"))


@pytest.mark.parametrize("server", [one_backend("postgresql")], indirect=True)
def test_an_iceberg_table_is_applied_on_a_server_and_planned_again_without_a_jvm(server: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "schemas" / "ice_db").mkdir(parents=True)
    (project / "schemas" / "ice_db" / "clicks.yaml").write_text(CLICKS)
    (project / "schemaflow.yaml").write_text("databases: [ice_db]\n")  # still managed once its last file goes
    env = on_server(project, server, tmp_path)
    applied = schemaflow(project, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "create Iceberg table ice_db.clicks" in applied.stdout

    again = schemaflow(project, "plan", env=env)
    assert (again.returncode, again.stdout) == (0, "No changes: the metastore matches the schemas (databases: ice_db).\n")
    assert again.stderr == f"Reading {server} ...\n"  # the metadata file read over plain Thrift and a file read
    reader = ThriftReader(server)
    live = reader.read(("ice_db",)).get("ice_db.clicks")
    assert isinstance(live, Table) and live.iceberg is not None
    assert [str(f) for f in live.partition_spec] == ["day(ts)", "bucket(8, id)"]
    # In the database's folder, where the metastore puts it: the metadata file is the table's first.
    assert "/ice_db.db/clicks/metadata/00000-" in live.iceberg.metadata_location
    assert Path(live.iceberg.metadata_location.removeprefix("file:")).is_file()

    (project / "migrations").mkdir()
    (project / "migrations" / "0001_val.yaml").write_text(
        "description: v is a value\nchanges:\n  - rename_column: {table: ice_db.clicks, from: v, to: val}\n")
    assert schemaflow(project, "hash-migrations").returncode == 0
    (project / "schemas" / "ice_db" / "clicks.yaml").write_text(
        CLICKS.replace("{name: v, type: int}", "{name: val, type: bigint}\n  - {name: extra, type: string}"))
    changed = schemaflow(project, "plan", "--format", "json", env=env)
    assert changed.returncode == 2 and "Starting Spark" not in changed.stderr, changed.stderr
    [step] = json.loads(changed.stdout)["steps"]
    assert (step["kind"], step["object"]) == ("alter_iceberg_table", "ice_db.clicks")
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
    done = schemaflow(project, "plan", env=env)
    assert (done.returncode, done.stderr) == (0, f"Reading {server} ...\n")

    live = reader.read(("ice_db",)).get("ice_db.clicks")
    assert isinstance(live, Table) and live.iceberg is not None
    metadata = read_metadata(live.iceberg.metadata_location)
    [first, current] = metadata["schemas"]
    assert [(f["id"], f["name"], f["type"]) for f in current["fields"]] == [
        (1, "ts", "timestamptz"), (2, "id", "long"), (3, "val", "long"), (4, "extra", "string")]
    assert [f["name"] for f in first["fields"]] == ["ts", "id", "v"]
    assert list(live.migrations) == ["0001_val"]
    (project / "schemas" / "ice_db" / "clicks.yaml").unlink()
    dropped = schemaflow(project, "apply", "--auto-approve", "--allow-destructive", env=env)
    assert dropped.returncode == 0, dropped.stdout + dropped.stderr
    assert "Iceberg table: its metastore entry goes; its data and metadata files are kept" in dropped.stdout
    assert reader.read(("ice_db",)).objects == {}
    assert Path(live.iceberg.metadata_location.removeprefix("file:")).is_file()


@pytest.mark.parametrize("where", ["claimed", "1.1"])
def test_an_apply_killed_between_iceberg_commits_is_finished_by_the_next_run(metastore_server: str, tmp_path: Path,
                                                                              where: str) -> None:
    db = "ice_kill_" + where.replace(".", "_")
    project = tmp_path / "project"
    (project / "schemas" / db).mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(metastore_setting(metastore_server) +
                                             f"warehouse_dir: {tmp_path / 'warehouse'}\n")
    for name in ("a", "b"):
        (project / "schemas" / db / f"{name}.yaml").write_text(
            CLICKS.replace("ice_db.clicks", f"{db}.{name}"))
    assert schemaflow(project, "apply", "--auto-approve").returncode == 0
    for name in ("a", "b"):
        (project / "schemas" / db / f"{name}.yaml").write_text(
            CLICKS.replace("ice_db.clicks", f"{db}.{name}").replace("{name: v, type: int}", "{name: v, type: bigint}"))

    process, marker = paused(project, where)
    os.kill(process.pid, signal.SIGKILL)  # between two commits: no clean-up of any kind runs
    process.communicate()
    marker.unlink()
    half_done = [key for key, obj in live_state(project, tmp_path).objects.items() if parse_claim(obj.version)]
    assert half_done, "the killed run left no claim behind"
    finished = schemaflow(project, "apply", "--auto-approve")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    again = schemaflow(project, "plan")
    assert (again.returncode, again.stdout.splitlines()[0]) == (
        0, f"No changes: the metastore matches the schemas (databases: {db}).")
    for obj in live_state(project, tmp_path).objects.values():
        assert isinstance(obj, Table) and [c.type for c in obj.columns] == ["timestamp", "bigint", "bigint"]
        assert obj.iceberg is not None and obj.iceberg.schema_id == 1  # one schema commit each, none repeated


@pytest.mark.parametrize("server", [one_backend("derby")], indirect=True)
def test_a_partitioned_parquet_table_is_converted_to_iceberg_on_a_server(server: str, tmp_path: Path, spark) -> None:
    from pyiceberg.table import StaticTable

    # Rows in three partitions, as a job writes them: Parquet files in each partition's folder, registered.
    project, env, written = filled(tmp_path, spark, server, "conv_db.orders", "parquet", 3)
    planned = schemaflow(project, "plan", "--format", "json", env=env)
    [step] = json.loads(planned.stdout)["steps"]
    assert (step["kind"], step["blocked"]) == ("convert_to_iceberg", None), planned.stdout + planned.stderr
    applied = schemaflow(project, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr

    live = ThriftReader(server).read(("conv_db",))
    orders, backup = live.get("conv_db.orders"), live.get("conv_db.orders_backup_")
    assert isinstance(orders, Table) and orders.iceberg is not None and [str(f) for f in orders.partition_spec] == ["dt"]
    assert isinstance(backup, Table) and backup.backup_of == "conv_db.orders" and backup.external
    read: dict = {}
    for row in StaticTable.from_metadata(orders.iceberg.metadata_location).scan().to_arrow().to_pylist():
        read.setdefault(row["dt"], []).append((row["id"], row["amount"], row["note"]))
    assert {dt: sorted(rows) for dt, rows in read.items()} == written
    again = schemaflow(project, "plan", env=env)
    assert (again.returncode, again.stderr) == (0, f"Reading {server} ...\n"), again.stdout + again.stderr
    assert "conv_db.orders_backup_ keeps the Parquet table conv_db.orders was converted from" in again.stdout
    # Iceberg's Java library reads the Parquet files (which carry no field ids) through the table's name mapping.
    java = iceberg_java.read(server, "conv_db.orders")
    assert [(name, kind) for _, name, kind in java.fields()] == [
        ("id", "long"), ("amount", "decimal(10, 2)"), ("note", "string"), ("dt", "date")]
    assert [(f["transform"], f["source-id"]) for f in java.spec["fields"]] == [("identity", java.fields()[3][0])]
    assert java.rows == tuple(sorted(f"Record({i}, {amount}, {note}, {dt.isoformat()})"
                                     for dt, rows in written.items() for i, amount, note in rows))


def test_a_struct_gains_fields_on_a_server_without_the_positional_rule(new_metastore_server, tmp_path: Path,
                                                                       spark) -> None:
    import pyarrow as pa
    from pyiceberg.table import StaticTable

    from schemaflow.model import TYPE_RULE
    from tests.iceberg_writer import OtherWriter

    events = "table: nest_db.events\nformat: iceberg\ncolumns:\n  - {name: id, type: bigint}\n" \
             "  - {name: info, type: 'struct<a:int,b:string>'}\n"
    project = tmp_path / "project"
    (project / "schemas" / "nest_db").mkdir(parents=True)
    (project / "schemas" / "nest_db" / "events.yaml").write_text(events)
    # The metastore's positional rule refuses any change of a complex type on its mirror: this server has it off,
    # as Iceberg's documentation asks of a metastore holding Iceberg tables.
    with new_metastore_server(default_backend(), tmp_path / "lenient", {TYPE_RULE: "false"}) as server:
        env = on_server(project, server.uri, tmp_path)
        assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
        with other_client(spark, server.uri) as other:
            table = OtherWriter(other).load_table("nest_db.events")
            table.append(pa.Table.from_pylist([{"id": 1, "info": {"a": 7, "b": "x"}}], schema=table.schema().as_arrow()))
        before = read_metadata(ThriftReader(server.uri).read(("nest_db",)).get("nest_db.events").iceberg.metadata_location)

        (project / "schemas" / "nest_db" / "events.yaml").write_text(
            events.replace("struct<a:int,b:string>", "struct<a:bigint,b:string,c:date>"))
        planned = schemaflow(project, "plan", "--format", "json", env=env)
        [step] = json.loads(planned.stdout)["steps"]
        assert (step["kind"], step["blocked"]) == ("alter_iceberg_table", None), planned.stdout
        assert step["summary"] == ("alter Iceberg table nest_db.events: change type of info from struct<a:int,b:string> "
                                   "to struct<a:bigint,b:string,c:date>")
        applied = schemaflow(project, "apply", "--auto-approve", env=env)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        live = ThriftReader(server.uri).read(("nest_db",)).get("nest_db.events")
        assert isinstance(live, Table) and live.columns[1].type == "struct<a:bigint,b:string,c:date>"
        after = read_metadata(live.iceberg.metadata_location)
        old_info = before["schemas"][-1]["fields"][1]["type"]["fields"]
        new_info = next(s for s in after["schemas"] if s["schema-id"] == after["current-schema-id"])["fields"][1]
        assert [(f["id"], f["name"]) for f in new_info["type"]["fields"][:2]] == [(f["id"], f["name"]) for f in old_info]
        assert new_info["type"]["fields"][0]["type"] == "long" and new_info["type"]["fields"][2]["id"] > before[
            "last-column-id"]
        rows = StaticTable.from_metadata(live.iceberg.metadata_location).scan().to_arrow().to_pylist()
        assert rows == [{"id": 1, "info": {"a": 7, "b": "x", "c": None}}]  # the row written before reads as it was


def test_a_commit_waits_for_the_metastore_lock_another_writer_holds(server: str, tmp_path: Path, spark) -> None:
    """Iceberg's Hive catalog commits under the metastore's table lock by default: a commit that took only the
    compare-and-swap could be overwritten by such a writer. These servers keep locks (their transaction tables
    exist, as production metastores have them), so apply takes the lock too, and waits for the other's."""
    import subprocess
    import sys
    import threading
    import time

    db = "lock_db"
    project = tmp_path / "project"
    (project / "schemas" / db).mkdir(parents=True)
    (project / "schemas" / db / "clicks.yaml").write_text(CLICKS.replace("ice_db", db))
    env = on_server(project, server, tmp_path)
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
    (project / "schemas" / db / "clicks.yaml").write_text(
        CLICKS.replace("ice_db", db).replace("  - {name: v, type: int}\n", "  - {name: v, type: int}\n"
                                                                           "  - {name: extra, type: string}\n"))
    jvm = spark.sparkContext._jvm
    with other_client(spark, server) as other:
        client, api = other.msc, other.api  # Hive's classes as the other client loads them
        component = api.LockComponent(api.LockType.EXCLUSIVE, api.LockLevel.TABLE, db)
        component.setTablename("clicks")
        components = jvm.java.util.ArrayList()
        components.add(component)
        held = client.lock(api.LockRequest(components, "other", "writer"))  # as Iceberg's Hive catalog takes it
        assert held.getState().toString() == "ACQUIRED"
        before = client.getTable(db, "clicks").getParameters().get("metadata_location")
        applying = subprocess.Popen([sys.executable, "-m", "schemaflow", "apply", "--auto-approve"], cwd=project,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, **env})
        said: list[str] = []
        reading = threading.Thread(target=lambda: said.extend(iter(lambda: applying.stdout.read(1), "")), daemon=True)
        reading.start()
        deadline = time.monotonic() + 240
        while f"waiting for the metastore's lock on {db}.clicks, which another writer holds" not in "".join(said):
            assert applying.poll() is None and time.monotonic() < deadline, "".join(said) + applying.stderr.read()
            time.sleep(0.2)
        time.sleep(3)  # a commit takes a fraction of that: it is waiting, not committing
        assert applying.poll() is None
        assert client.getTable(db, "clicks").getParameters().get("metadata_location") == before
        client.unlock(held.getLockid())
        assert applying.wait(timeout=300) == 0, "".join(said) + applying.stderr.read()
        reading.join(timeout=60)
        assert client.getTable(db, "clicks").getParameters().get("metadata_location") != before
        assert client.showLocks(api.ShowLocksRequest()).getLocks().size() == 0  # and it let its own go
    live = ThriftReader(server).read((db,)).get(f"{db}.clicks")
    assert isinstance(live, Table) and [c.name for c in live.columns] == ["ts", "id", "v", "extra"]


def test_every_evolution_kind_on_a_server_and_a_plan_another_writer_made_stale(server: str, tmp_path: Path,
                                                                                spark) -> None:
    from datetime import UTC, datetime

    import pyarrow as pa
    from pyiceberg.table import StaticTable
    from pyiceberg.types import StringType

    from tests.iceberg_writer import OtherWriter

    db = "evo_db"
    key = f"{db}.clicks"
    project = tmp_path / "project"
    (project / "schemas" / db).mkdir(parents=True)
    (project / "schemas" / db / "clicks.yaml").write_text(CLICKS.replace("ice_db", db))
    env = on_server(project, server, tmp_path)
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
    day = datetime(2024, 1, 1, 12, tzinfo=UTC)
    with other_client(spark, server) as other:
        table = OtherWriter(other).load_table(key)
        table.append(pa.Table.from_pylist([{"ts": day.replace(day=d), "id": d, "v": 10 * d} for d in (1, 2)],
                                          schema=table.schema().as_arrow()))
    reader = ThriftReader(server)
    first = read_metadata(reader.read((db,)).get(key).iceberg.metadata_location)

    # A rename (migration) and a promotion, a column added, the spec and the sort order, in one commit.
    (project / "migrations").mkdir()
    (project / "migrations" / "0001_val.yaml").write_text(
        f"description: v is a value\nchanges:\n  - rename_column: {{table: {key}, from: v, to: val}}\n")
    assert schemaflow(project, "hash-migrations").returncode == 0
    (project / "schemas" / db / "clicks.yaml").write_text(
        CLICKS.replace("ice_db", db).replace("{name: v, type: int}", "{name: val, type: bigint}\n"
                                             "  - {name: extra, type: string, comment: Later}")
        .replace("[day(ts), bucket(8, id)]", "[month(ts)]").replace("sorted_by: [id]", "sorted_by: [ts DESC NULLS LAST]"))
    saved = schemaflow(project, "plan", "--out", "plan.json", env=env)
    assert saved.returncode == 2, saved.stdout + saved.stderr
    # Another writer changes the schema after the review: the reviewed plan is refused, nothing applied.
    with other_client(spark, server) as other:
        with OtherWriter(other).load_table(key).update_schema() as update:
            update.add_column("theirs", StringType())
    refused = schemaflow(project, "apply", "plan.json", "--auto-approve", env=env)
    assert refused.returncode == 1 and "plan.json is stale" in refused.stderr, refused.stdout + refused.stderr
    assert "nothing was applied" in refused.stderr
    assert [c.name for c in reader.read((db,)).get(key).columns] == ["ts", "id", "v", "theirs"]

    # Their column dropped with a migration, as drift would offer, and id moved after val: planned again, applied.
    (project / "migrations" / "0002_theirs.yaml").write_text(
        f"description: not ours\nchanges:\n  - drop_column: {{table: {key}, column: theirs}}\n")
    assert schemaflow(project, "hash-migrations").returncode == 0
    text = (project / "schemas" / db / "clicks.yaml").read_text()
    (project / "schemas" / db / "clicks.yaml").write_text(text.replace(
        "  - {name: id, type: bigint}\n  - {name: val, type: bigint}\n",
        "  - {name: val, type: bigint}\n  - {name: id, type: bigint}\n"))
    planned = json.loads(schemaflow(project, "plan", "--format", "json", env=env).stdout)
    [step] = planned["steps"]
    assert step["hazards"] == ["drop theirs: its values stay in the data files, and no reader sees them"]
    applied = schemaflow(project, "apply", "--auto-approve", env=env)  # the migration names the drop
    assert applied.returncode == 0, applied.stdout + applied.stderr
    live = reader.read((db,)).get(key)
    assert isinstance(live, Table) and [(c.name, c.type) for c in live.columns] == [
        ("ts", "timestamp"), ("val", "bigint"), ("id", "bigint"), ("extra", "string")]
    assert [str(f) for f in live.partition_spec] == ["month(ts)"]
    assert [str(t) for t in live.sort_order] == ["ts DESC NULLS LAST"]
    metadata = read_metadata(live.iceberg.metadata_location)
    ids = {f["name"]: f["id"] for f in next(s for s in metadata["schemas"]
                                           if s["schema-id"] == metadata["current-schema-id"])["fields"]}
    assert (ids["ts"], ids["id"], ids["val"]) == tuple(f["id"] for f in first["schemas"][0]["fields"])
    # As the step said: no data file rewritten; the rows written before read as they were, the new columns empty.
    rows = StaticTable.from_metadata(live.iceberg.metadata_location).scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["val"], r["extra"], "theirs" in r) for r in rows) == [
        (1, 10, None, False), (2, 20, None, False)]
    assert schemaflow(project, "plan", env=env).returncode == 0

    # Iceberg's Java library, which Spark, Trino and Flink read with, reads the same table from the same server.
    java = iceberg_java.read(server, key)
    assert java.fields() == [(ids["ts"], "ts", "timestamptz"), (ids["val"], "val", "long"), (ids["id"], "id", "long"),
                             (ids["extra"], "extra", "string")]
    assert [(f["transform"], f["source-id"]) for f in java.spec["fields"]] == [("month", ids["ts"])]
    assert [(f["transform"], f["source-id"], f["direction"], f["null-order"]) for f in java.sort["fields"]] == [
        ("identity", ids["ts"], "desc", "nulls-last")]
    assert java.rows == ("Record(2024-01-01T12:00Z, 10, 1, null)", "Record(2024-01-02T12:00Z, 20, 2, null)")
    assert java.properties["schemaflow.version"] == live.version


# What another team's Spark job could register as an Iceberg table's metadata file, and what plan says of each.
HOSTILE_METADATA = {
    "zero": ("/dev/zero", "is not a regular file"),
    "pipe": ("{tmp}/pipe.metadata.json", "is not a regular file"),
    "huge": ("{tmp}/huge.metadata.json", "more than the 67,108,864 schemaflow reads"),
    "listed": ("file:{tmp}/list.metadata.json", "is not a JSON object"),
    "deep": ("{tmp}/deep.metadata.json", "is nested too deep to be Iceberg's"),
    "typed": ("{tmp}/typed.metadata.json", "is not an Iceberg table's metadata (TypeError: "),
    "elsewhere": ("s3://attacker-bucket/t/metadata/1.metadata.json", "is not on the storage its database is on"),
}


def test_iceberg_tables_another_client_points_at_hostile_metadata_are_refused_one_by_one(
        metastore_server: str, tmp_path: Path, spark) -> None:
    project = tmp_path / "project"
    (project / "schemas" / "ice_db").mkdir(parents=True)
    (project / "schemas" / "ice_db" / "clicks.yaml").write_text(CLICKS)
    env = on_server(project, metastore_server, tmp_path)
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
    os.mkfifo(tmp_path / "pipe.metadata.json")
    with (tmp_path / "huge.metadata.json").open("wb") as huge:
        huge.truncate(70 * 2**20)
    (tmp_path / "list.metadata.json").write_text("[1, 2, 3]")
    (tmp_path / "deep.metadata.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "typed.metadata.json").write_text(json.dumps({"format-version": 2, "table-uuid": "u", "schemas": 7}))
    with other_client(spark, metastore_server) as other:
        entry = other.msc.getTable("ice_db", "clicks")
        for name, (location, _) in HOSTILE_METADATA.items():
            hostile = entry.deepCopy()
            hostile.setTableName(name)
            parameters = hostile.getParameters()
            for key in [k for k in parameters.keySet() if k.startswith("schemaflow.")]:
                parameters.remove(key)
            parameters.put("metadata_location", location.format(tmp=tmp_path))
            other.msc.createTable(hostile)

    # Left alone, as every Iceberg table schemaflow did not make: read within bounds, and nothing to do.
    left = schemaflow(project, "plan", env=env)
    assert left.returncode == 0, left.stdout + left.stderr
    assert left.stdout.startswith("No changes") and "Traceback" not in left.stderr
    # Declared, each is refused in a line of its own that says why; nothing is applied.
    for name in HOSTILE_METADATA:
        (project / "schemas" / "ice_db" / f"{name}.yaml").write_text(CLICKS.replace("ice_db.clicks", f"ice_db.{name}"))
    for command in (("plan",), ("apply", "--auto-approve")):
        refused = schemaflow(project, *command, env=env)
        assert refused.returncode == 1 and "Traceback" not in refused.stdout + refused.stderr, refused.stderr
        said = refused.stdout + refused.stderr
        for name, (location, reason) in HOSTILE_METADATA.items():
            # The plan's step, and (from apply) the error that lists the blocked steps: each says it in one line.
            lines = [line for line in said.splitlines() if f"ice_db.{name}" in line and "could not be read" in line]
            assert len(lines) == (1 if command == ("plan",) else 2), said
            assert all(repr(location.format(tmp=tmp_path)) in line and reason in line for line in lines), lines
    reader = ThriftReader(metastore_server)
    live = reader.read(("ice_db",))
    assert sorted(live.objects) == ["ice_db.clicks", *sorted(f"ice_db.{name}" for name in HOSTILE_METADATA)]
    assert all(not obj.version for key, obj in live.objects.items() if key != "ice_db.clicks")  # none was written


@pytest.mark.parametrize("server", [one_backend("postgresql")], indirect=True)
def test_an_orc_table_is_converted_to_iceberg_by_copying_on_a_server(server: str, tmp_path: Path, spark) -> None:
    """Converted by copying: rows Spark copied into Parquet files Iceberg registered, read back by Iceberg's Java
    library; the ORC table kept as the backup."""
    project, env, written = filled(tmp_path, spark, server, "conv_orc.orders", "orc", 2)
    planned = schemaflow(project, "plan", "--allow-destructive", "--format", "json", env=env)
    [step] = json.loads(planned.stdout)["steps"]
    assert (step["kind"], [a["action"] for a in step["actions"]][:2]) == (
        "rewrite_table", ["rewrite_rows", "iceberg_commit"]), planned.stdout + planned.stderr
    applied = schemaflow(project, "apply", "--auto-approve", "--allow-destructive", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr

    live = ThriftReader(server).read(("conv_orc",))
    orders, backup = live.get("conv_orc.orders"), live.get("conv_orc.orders_backup_")
    assert isinstance(orders, Table) and orders.iceberg is not None
    assert isinstance(backup, Table) and backup.format == "orc" and backup.backup_of == "conv_orc.orders"
    java = iceberg_java.read(server, "conv_orc.orders")
    assert [(name, kind) for _, name, kind in java.fields()] == [
        ("id", "long"), ("amount", "decimal(10, 2)"), ("note", "string"), ("dt", "date")]
    assert java.rows == tuple(sorted(f"Record({i}, {amount}, {note}, {dt.isoformat()})"
                                     for dt, rows in written.items() for i, amount, note in rows))
    again = schemaflow(project, "plan", env=env)
    assert again.returncode == 0 and "No changes" in again.stdout, again.stdout + again.stderr

