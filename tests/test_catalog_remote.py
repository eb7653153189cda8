"""The live state through a standalone Thrift metastore server, from schemaflow in other processes.

One process creates objects through the server, another reads them back: the state lives in the
server. Each process starts its own JVM (a second SparkSession cannot start in the test process),
and a user of schemaflow sees nothing of Spark's or Hive's logging on stderr.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from collections.abc import Callable

import pytest

from schemaflow.catalog.snapshot import read_snapshot
from schemaflow.model import Column, Stored, Table, View
from tests.metastore_server import NewServer, default_backend, free_port, metastore_setting

pytestmark = pytest.mark.remote
RunPython = Callable[..., subprocess.CompletedProcess[str]]  # the run_python fixture

# argv: metastore URI, warehouse dir, state dir, then what the snippet needs.
SESSION = """
import sys
from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.catalog.hive.session import spark_session
from schemaflow.errors import SchemaflowError
from schemaflow.project import Settings
settings = Settings(metastore_uri=sys.argv[1], warehouse_dir=sys.argv[2], derby_dir=sys.argv[3])
spark = spark_session(settings)
"""
CREATE = SESSION + """
spark.sql("CREATE DATABASE remote_db")
spark.sql("CREATE TABLE remote_db.orders (id BIGINT COMMENT 'Order id', amount DECIMAL(12,2)) "
          "COMMENT 'Orders' PARTITIONED BY (ds STRING) STORED AS ORC")
spark.sql("INSERT INTO remote_db.orders PARTITION (ds) VALUES (1, 2.5, 'a'), (2, 3.5, 'b')")
spark.sql("CREATE VIEW remote_db.big (order_id COMMENT 'Id') AS SELECT id FROM remote_db.orders WHERE amount > 3")
metastore = Metastore.connect(spark)
metastore.set_parameters("remote_db.orders", {"owner": "sales", "schemaflow.version": "v1"}, [])
print(metastore.endpoint)
"""
READ = SESSION + """
from schemaflow.catalog.snapshot import write_snapshot
metastore = Metastore.connect(spark)
write_snapshot(metastore.read(("remote_db", "absent_db")), sys.argv[4],
               partition_counts={"remote_db.orders": metastore.count_partitions("remote_db.orders")})
"""
# argv 4 and 5: a database to create, and how many partitions its table ``events`` gets.
PARTITIONED = SESSION + """
database, count = sys.argv[4], int(sys.argv[5])
spark.sql(f"CREATE DATABASE {database}")
spark.sql(f"CREATE TABLE {database}.events (id INT) PARTITIONED BY (ds STRING) STORED AS PARQUET")
spark.sql(f"INSERT INTO {database}.events PARTITION (ds) SELECT id, CAST(id AS STRING) FROM range({count})")
"""
# A stamp written on a second connection, from another thread, guarded as on the first.
BESIDE = SESSION + """
import threading
from schemaflow.errors import ConcurrentChange
spark.sql("CREATE DATABASE beside_db")
spark.sql("CREATE TABLE beside_db.t (id BIGINT) STORED AS PARQUET TBLPROPERTIES ('schemaflow.version'='claim')")
from tests.metastore_server import lock_guards
metastore = Metastore.connect(spark, lock_guards=lock_guards())
with metastore.beside() as second:
    outcomes = []
    def stamp():
        second.set_parameters("beside_db.t", {"schemaflow.version": "v1", "owner": "sales"}, [], "claim")
        try:
            second.set_parameters("beside_db.t", {"schemaflow.version": "v2"}, [], "claim")
        except ConcurrentChange as refused:
            outcomes.append(str(refused))
    thread = threading.Thread(target=stamp)
    thread.start()
    thread.join()
    print(second.msc is not metastore.msc and second.msc.getTable("beside_db", "t").getTableName())
print(outcomes[0] if outcomes else "not refused")
print(metastore.read(("beside_db",)).objects["beside_db.t"].version)
print(metastore.read(("beside_db",)).objects["beside_db.t"].properties)
"""
# An apply of three new tables: which threads wrote the stamps, and what the metastore holds after.
APPLY_BESIDE = SESSION + """
import threading
from schemaflow.apply.executor import apply_plan
from schemaflow.model import Catalog, Column, Table, fingerprint
from schemaflow.plan.plan import PlanBuilder
desired = Catalog(("lane_db",), {f"lane_db.t{i}": Table("lane_db", f"t{i}", (Column("id", "bigint"),)) for i in range(3)})
metastore = Metastore.connect(spark)
stamped = []
write = Metastore.set_parameters
def recorded(self, key, *args, **kwargs):
    stamped.append((key, threading.current_thread().name, self.msc is metastore.msc))
    write(self, key, *args, **kwargs)
Metastore.set_parameters = recorded
apply_plan(PlanBuilder(desired, Catalog()).build(), metastore)
print(stamped)
live = metastore.read(("lane_db",))
print([live.objects[key].version == fingerprint(table) for key, table in sorted(desired.objects.items())])
"""
CONNECT = SESSION.replace("spark = spark_session(settings)", "") + """
try:
    Metastore.connect(spark_session(settings))
except SchemaflowError as error:
    print(error)
"""


def test_objects_created_through_the_server_read_back(
    metastore_server: str, run_python: RunPython, tmp_path: Path,
) -> None:
    warehouse, snapshot = tmp_path / "warehouse", tmp_path / "live.json"
    created = run_python(CREATE, metastore_server, str(warehouse), str(tmp_path / "creator"))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == metastore_server
    assert created.stderr == ""

    read = run_python(READ, metastore_server, str(warehouse), str(tmp_path / "reader"), str(snapshot))
    assert read.returncode == 0, read.stderr
    assert read.stderr == ""

    live = read_snapshot(snapshot)
    assert live.databases == ("remote_db",)
    orders = live.objects["remote_db.orders"]
    assert orders == Table(
        "remote_db", "orders", (Column("id", "bigint", "Order id"), Column("amount", "decimal(12,2)")),
        partition_columns=(Column("ds", "string"),), comment="Orders", format="orc",
        properties={"owner": "sales"},
    )
    assert orders.version == "v1"
    assert live.objects["remote_db.big"] == View(
        "remote_db", "big", "SELECT id FROM remote_db.orders WHERE amount > 3",
        columns=(Column("order_id", "bigint", "Id"),),
    )
    assert json.loads(snapshot.read_text())["partition_counts"] == {"remote_db.orders": 2}


def test_a_second_connection_writes_from_another_thread_guarded_as_the_first(
    metastore_server: str, run_python: RunPython, tmp_path: Path,
) -> None:
    # apply's stamps run on it beside the next step (apply.lane).
    done = run_python(BESIDE, metastore_server, str(tmp_path / "warehouse"), str(tmp_path / "state"))
    assert done.returncode == 0, done.stderr
    second, refused, version, properties = done.stdout.splitlines()
    assert second == "t"
    assert refused == "beside_db.t was modified concurrently: its schemaflow.version is 'v1', this run expected 'claim'"
    assert (version, properties) == ("v1", "{'owner': 'sales'}")


def test_an_apply_against_a_server_writes_its_stamps_on_the_second_connection(
    metastore_server: str, run_python: RunPython, tmp_path: Path,
) -> None:
    done = run_python(APPLY_BESIDE, metastore_server, str(tmp_path / "warehouse"), str(tmp_path / "state"))
    assert done.returncode == 0, done.stderr
    stamped, versions = done.stdout.splitlines()
    assert stamped == str([(f"lane_db.t{i}", "apply-lane", False) for i in range(3)])
    assert versions == "[True, True, True]"  # read back from the server: every stamp landed


def test_an_unreachable_metastore_is_one_clear_line(run_python: RunPython, tmp_path: Path) -> None:
    uri = f"thrift://127.0.0.1:{free_port()}"
    result = run_python(CONNECT, uri, str(tmp_path / "warehouse"), str(tmp_path / "state"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    # Refused before Spark starts, as a plan without a JVM refuses it, not after Hive's client has retried.
    assert result.stdout.startswith(f"cannot reach the Hive metastore {uri} (metastore.uri in schemaflow.yaml or "
                                    "SCHEMAFLOW_METASTORE_URI): ")
    assert result.stdout.count("\n") == 1
    assert not (tmp_path / "state" / "jvm.log").exists()


def test_partition_counts_come_from_the_server_without_a_jvm(
    metastore_server: str, run_python: RunPython, tmp_path: Path,
) -> None:
    from schemaflow.catalog.hive.thrift_reader import ThriftError, hints as plan_hints

    made = run_python(PARTITIONED, metastore_server, str(tmp_path / "warehouse"), str(tmp_path / "state"), "counted", "7")
    assert made.returncode == 0, made.stderr
    hints = plan_hints(metastore_server)
    assert (hints.count_partitions("counted.events"), hints.count_partitions("counted.missing")) == (7, None)
    # What a rewrite would read, from the statistics the server keeps of each partition: the files Spark wrote.
    written = [f for f in (tmp_path / "warehouse").rglob("*") if f.is_file() and "events" in f.parts
               and not f.name.startswith((".", "_"))]
    assert hints.stored("counted.events") == Stored(sum(f.stat().st_size for f in written), len(written), 7)
    assert hints.stored("counted.missing") is None
    # Where a conversion's footers are read at plan time: each partition's folder.
    folders = hints.data_folders("counted.events")
    assert [f.rsplit("/", 1)[1] for f in folders] == sorted(f"ds={i}" for i in range(7))
    assert all(Path(f.removeprefix("file:")).is_dir() for f in folders)
    unreachable = plan_hints(f"thrift://127.0.0.1:{free_port()}", timeout=1)
    assert unreachable.count_partitions("counted.events") is None
    with pytest.raises(ThriftError):
        plan_hints("jdbc:derby:nope")


def test_plan_between_refs_shows_partition_counts_from_a_configured_metastore(
    metastore_server: str, run_python: RunPython, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from schemaflow.cli import main
    from tests.gitrepos import commit, init_repo

    made = run_python(PARTITIONED, metastore_server, str(tmp_path / "warehouse"), str(tmp_path / "state"), "reviewed", "4")
    assert made.returncode == 0, made.stderr
    project = tmp_path / "project"
    repo = init_repo(project)
    table = project / "schemas/reviewed/events.yaml"
    table.parent.mkdir(parents=True)
    table.write_text("table: reviewed.events\ncolumns: [{name: id, type: int}]\npartitioned_by: [{name: ds, type: string}]\n")
    (project / "schemaflow.yaml").write_text(metastore_setting(metastore_server))
    commit(repo, "base")
    table.write_text(table.read_text().replace("[{name: id, type: int}]", "[{name: id, type: int}, {name: b, type: string}]"))

    assert main(["--project", str(project), "plan", "--base", "main", "--format", "markdown"]) == 2
    comment = capsys.readouterr().out
    assert f"with partition counts from {metastore_server}" in comment
    assert "table only: 4 partitions keep their old column list" in comment


# argv 4: the project folder. Plans, applies and plans again through the CLI; prints the live type of a.
EVOLVE = SESSION + """
from schemaflow.cli import main
project = sys.argv[4]
print("rule", Metastore.connect(spark).enforces_type_rule())
print("plan", main(["--project", project, "plan"]))
print("apply", main(["--project", project, "apply", "--auto-approve", *sys.argv[5:]]))
print("again", main(["--project", project, "plan"]))
print("type", [c.getType() for c in Metastore.connect(spark).msc.getTable("typed", "t").getSd().getCols()])
"""


def said(out: str) -> list[str]:
    """The lines EVOLVE prints itself, without the plans the commands print between them."""
    return [line for line in out.splitlines() if line.split(" ")[0] in ("rule", "plan", "apply", "again", "type")]


def test_a_server_that_allows_any_type_change_gets_plans_that_block_it_only_for_its_readers(
    run_python: RunPython, tmp_path: Path, metastore_server: str, new_metastore_server: NewServer,
) -> None:
    from schemaflow.model import TYPE_RULE

    project = tmp_path / "project"
    (project / "schemas" / "typed").mkdir(parents=True)
    table = project / "schemas" / "typed" / "t.yaml"
    with new_metastore_server(default_backend(), tmp_path / "lenient", {TYPE_RULE: "false"}) as server:
        (project / "schemaflow.yaml").write_text(metastore_setting(server.uri))
        table.write_text("table: typed.t\ncolumns: [{name: a, type: int}, {name: b, type: string}]\n")
        done = run_python(EVOLVE, server.uri, "", str(tmp_path / "state1"), str(project))
        assert done.returncode == 0, done.stderr
        # int -> boolean: the default rule refuses it; this server does not, and neither does the plan: it blocks
        # the step only as a break of its Spark's reading of the files written before, which --allow-destructive
        # allows (this apply runs with it).
        table.write_text("table: typed.t\ncolumns: [{name: a, type: boolean}, {name: b, type: string}]\n")
        done = run_python(EVOLVE, server.uri, "", str(tmp_path / "state2"), str(project), "--allow-destructive")
        assert done.returncode == 0, done.stderr
        assert said(done.stdout) == ["rule False", "plan 1", "apply 0", "again 0", "type ['boolean', 'string']"]
        assert "breaks a reader of the table" in done.stdout
        assert "cannot change from int to boolean" not in done.stdout
    # The shared server keeps Hive's default: the same change is blocked there, before anything runs.
    (project / "schemaflow.yaml").write_text(metastore_setting(metastore_server))
    table.write_text("table: typed.t\ncolumns: [{name: a, type: int}, {name: b, type: string}]\n")
    assert run_python(EVOLVE, metastore_server, "", str(tmp_path / "state3"), str(project)).returncode == 0
    table.write_text("table: typed.t\ncolumns: [{name: a, type: boolean}, {name: b, type: string}]\n")
    done = run_python(EVOLVE, metastore_server, "", str(tmp_path / "state4"), str(project))
    assert said(done.stdout) == ["rule True", "plan 1", "apply 1", "again 1", "type ['int', 'string']"]
    assert "column a cannot change from int to boolean" in done.stdout
