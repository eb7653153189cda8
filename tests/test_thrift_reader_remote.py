"""Reading a metastore server without a JVM reads what Spark's own client reads.

A warehouse of every kind of object schemaflow meets (Hive-format and data-source tables, bucketed,
external, SerDe tables, views with comments, a partitioned view with partitions, text beyond ASCII)
is made through Spark against a standalone metastore server, on Derby and on PostgreSQL. A process
with a JVM reads it through Spark's client; this process reads it over plain Thrift; the Thrift
structs, the model made from them, partition counts and names, and the type rule must be the same.
Then ``plan`` as a user runs it: with nothing to do it starts no JVM, and a metastore that does not
answer plain Thrift (here: framed transport, which the client learns from hive-site.xml) is read
through Spark instead.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping

import pytest

from schemaflow.catalog.snapshot import load_snapshot
from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.errors import SchemaflowError
from tests.conftest import NewServer
from tests.metastore_server import BACKENDS, default_backend, free_port
from tests.projects import schemaflow

pytestmark = pytest.mark.remote
RunPython = Callable[..., subprocess.CompletedProcess[str]]
ROOT = Path(__file__).resolve().parent.parent

# argv: metastore URI, warehouse dir, state dir, output JSON, snapshot path.
MAKE_AND_READ = """
import json, sys
from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.catalog.hive.session import spark_session
from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.project import Settings
spark = spark_session(Settings(metastore_uri=sys.argv[1], warehouse_dir=sys.argv[2], derby_dir=sys.argv[3]))
# The module's fixture may be made again on the same server (pytest-xdist runs the tests of its two
# servers in any order): the warehouse is made once, and read each time.
made = "wide" in [row[0] for row in spark.sql("SHOW DATABASES").collect()]
for statement in [] if made else [
    "CREATE DATABASE wide COMMENT 'Everything' WITH DBPROPERTIES ('team' = 'data', 'note' = 'größe ✓')",
    "CREATE TABLE wide.orders (id BIGINT COMMENT 'Order id', amount DECIMAL(12,2), tags ARRAY<STRING>, "
    "  attrs MAP<STRING,INT>, device STRUCT<kind:STRING,os:STRING> COMMENT 'Größe ✓') "
    "COMMENT 'Orders, ünïcödé' PARTITIONED BY (ds STRING, hr INT) STORED AS ORC "
    "TBLPROPERTIES ('team' = 'sales', 'note' = '日本語')",
    "INSERT INTO wide.orders PARTITION (ds, hr) VALUES (1, 2.5, array('a'), map('k', 1), named_struct('kind', 'x', 'os', 'y'), 'a/b', 1)",
    "CREATE TABLE wide.events (id INT, kind STRING) USING parquet PARTITIONED BY (kind) "
    "CLUSTERED BY (id) SORTED BY (id) INTO 4 BUCKETS OPTIONS ('compression' = 'snappy') COMMENT 'Events'",
    "CREATE TABLE wide.bucketed (id INT, name STRING) CLUSTERED BY (id) SORTED BY (name) INTO 8 BUCKETS "
    "STORED AS PARQUET",
    "CREATE EXTERNAL TABLE wide.raw (line STRING) STORED AS TEXTFILE LOCATION '" + sys.argv[2] + "/raw'",
    "CREATE TABLE wide.csv (a STRING, b STRING) ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.OpenCSVSerde' "
    "WITH SERDEPROPERTIES ('separatorChar' = ';') STORED AS TEXTFILE",
    "CREATE VIEW wide.recent (order_id COMMENT 'The id', ds) COMMENT 'Recent orders' AS "
    "SELECT id, ds FROM wide.orders WHERE amount > 1",
    "CREATE VIEW wide.by_day AS SELECT id, kind FROM wide.events",
    "CREATE DATABASE other",
    "CREATE TABLE other.t (x INT)",
]:
    spark.sql(statement)
metastore = Metastore.connect(spark)
if not made:
    metastore.partition_view("wide.by_day", ["kind"])
    metastore.change_view_partitions("wide.by_day", ["kind"], [("a",), ("b/c",), ("x=y",)], [])
databases = ("wide", "other", "absent")
write_snapshot(metastore.read(databases), sys.argv[5])
json.dump({
    "databases": list(metastore.databases()),
    "details": {name: metastore.to_data(metastore.msc.getDatabase(name)) for name in ("wide", "other")},
    "tables": {d: list(metastore.table_data(d)) for d in ("wide", "other")},
    "counts": {key: metastore.count_partitions(key) for key in ("wide.orders", "wide.events", "wide.by_day")},
    "partitions": {key: metastore.partition_values(key) for key in ("wide.orders", "wide.by_day")},
    "type_rule": metastore.enforces_type_rule(),
}, open(sys.argv[4], "w"))
"""


# Fields of a Thrift Table the reader skips, as nothing in the model comes from them (the last three came with Hive 3
# and 4: Hive 4's client, which Spark is given for a Hive 4 server, reads them).
SKIPPED = frozenset({"privileges", "skewedInfo", "catName", "id", "writeId", "ownerType"})


def without_skipped(data: Any) -> Any:
    """``data`` (Thrift's simple JSON of structs) without the fields in ``SKIPPED``, at any depth."""
    if isinstance(data, list):
        return [without_skipped(item) for item in data]
    if isinstance(data, dict):
        return {key: without_skipped(value) for key, value in data.items() if key not in SKIPPED}
    return data


@pytest.fixture(scope="module", params=BACKENDS)
def made(request: pytest.FixtureRequest, run_python: RunPython,
         tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Mapping[str, Any], Path]:
    """A server holding the warehouse; what Spark's client read of it; the snapshot of it."""
    uri = request.getfixturevalue("metastore_server" if request.param == "derby" else "postgres_metastore_server")
    work = tmp_path_factory.mktemp(f"thrift_reader_{request.param}")
    read, snapshot = work / "read.json", work / "live.json"
    made = run_python(MAKE_AND_READ, uri, str(work / "warehouse"), str(work / "state"), str(read), str(snapshot))
    assert made.returncode == 0, made.stderr
    return uri, json.loads(read.read_text()), snapshot


def test_the_thrift_structs_are_those_spark_s_client_reads(made: tuple[str, Mapping[str, Any], Path]) -> None:
    uri, jvm, _ = made
    reader = ThriftReader.connect(uri)
    assert {"wide", "other"} <= set(reader.databases()) and list(reader.databases()) == jvm["databases"]
    for database in ("wide", "other"):
        tables = list(reader.table_data(database))
        assert tables == without_skipped(jvm["tables"][database])
        assert len(tables) == (7 if database == "wide" else 1)
    orders = next(t for t in reader.table_data("wide") if t["tableName"] == "orders")
    assert orders["sd"]["cols"][4] == {"name": "device", "type": "struct<kind:string,os:string>", "comment": "Größe ✓"}
    assert orders["parameters"]["note"] == "日本語"


def test_the_live_state_counts_and_partitions_are_those_spark_s_client_reads(
        made: tuple[str, Mapping[str, Any], Path]) -> None:
    uri, jvm, snapshot = made
    reader = ThriftReader.connect(uri)
    assert reader.read(("wide", "other", "absent")) == load_snapshot(snapshot).catalog
    assert {key: reader.count_partitions(key) for key in jvm["counts"]} == jvm["counts"]
    assert {key: [list(v) for v in reader.partition_values(key)] for key in jvm["partitions"]} == jvm["partitions"]
    assert reader.partition_values("wide.by_day") == (("a",), ("b/c",), ("x=y",))
    assert reader.enforces_type_rule() is jvm["type_rule"]
    assert reader.database("wide").properties == {"note": "größe ✓", "team": "data"}
    with pytest.raises(SchemaflowError, match=r"^reading database absent: .*absent"):
        reader.database("absent")


def test_an_unreachable_server_is_one_clear_error_after_the_retries() -> None:
    uri = f"thrift://127.0.0.1:{free_port()}"
    waits: list[float] = []
    reader = ThriftReader(uri, sleep=waits.append)
    with pytest.raises(SchemaflowError, match=rf"^cannot reach the Hive metastore \({uri}\): .*refused"):
        reader.databases()
    assert waits == [1.0, 2.0, 4.0]


def test_plan_with_nothing_to_do_starts_no_jvm_and_says_what_the_jvm_reader_says(
        metastore_server: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "schemas" / "direct_db").mkdir(parents=True)
    (project / "schemas" / "direct_db" / "t.yaml").write_text(
        "table: direct_db.t\ncolumns: [{name: id, type: bigint, comment: Key}]\npartitioned_by: [{name: ds, type: string}]\n")
    (project / "schemas" / "direct_db" / "v.yaml").write_text("view: direct_db.v\nsql: SELECT id FROM direct_db.t\n")
    env = {"SCHEMAFLOW_METASTORE_URI": metastore_server, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse")}
    first = schemaflow(project, "plan", env=env)
    assert first.returncode == 2, first.stderr
    # The view's SQL is checked by Spark: a plan that creates a view starts it, after the read.
    assert first.stderr.index(f"Reading {metastore_server} ...") < first.stderr.index("Starting Spark")
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0

    again = schemaflow(project, "plan", env=env)
    assert (again.returncode, again.stdout) == (0, "No changes: the metastore matches the schemas (databases: direct_db).\n")
    assert again.stderr == f"Reading {metastore_server} ...\n"
    # What Spark's client reads plans the same: a client setting of the user's makes schemaflow use it.
    (project / "schemaflow.yaml").write_text("spark: {conf: {spark.hadoop.hive.metastore.client.socket.timeout: '600'}}\n")
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0  # the settings, recorded
    tuned = schemaflow(project, "plan", env=env)
    assert (tuned.returncode, tuned.stdout) == (0, again.stdout)
    assert "Starting Spark" in tuned.stderr and f"Reading {metastore_server} ..." not in tuned.stderr
    (project / "schemaflow.yaml").unlink()
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0  # no settings, recorded

    (project / "schemas" / "direct_db" / "t.yaml").write_text(
        "table: direct_db.t\ncolumns: [{name: id, type: bigint, comment: Key}, {name: n, type: int}]\n"
        "partitioned_by: [{name: ds, type: string}]\n")
    changed = schemaflow(project, "plan", "--format", "json", env=env)
    assert changed.returncode == 2 and "Starting Spark" not in changed.stderr
    steps = json.loads(changed.stdout)["steps"]
    assert [(s["object"], s["kind"]) for s in steps] == [("direct_db.t", "add_columns")]


def test_history_reads_a_metastore_server_without_a_jvm(metastore_server: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "schemas" / "history_db").mkdir(parents=True)
    (project / "schemas" / "history_db" / "t.yaml").write_text("table: history_db.t\ncolumns: [{name: id, type: bigint}]\n")
    env = {"SCHEMAFLOW_METASTORE_URI": metastore_server, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse")}
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
    history = schemaflow(project, "history", env=env)
    assert (history.returncode, history.stderr) == (0, f"Reading {metastore_server} ...\n")
    header, record = history.stdout.splitlines()
    assert header.split()[2:4] == ["OBJECT", "CHANGE"]
    assert record.split()[1:4] == ["history_db.t", "create", "version"], history.stdout


def test_a_plan_reads_the_databases_the_settings_name_while_it_parses_the_files(
        metastore_server: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "schemas" / "ahead_db").mkdir(parents=True)
    table = project / "schemas" / "ahead_db" / "t.yaml"
    table.write_text("table: ahead_db.t\ncolumns: [{name: id, type: bigint}]\n")
    (project / "schemaflow.yaml").write_text("databases: [ahead_db]\n")
    env = {"SCHEMAFLOW_METASTORE_URI": metastore_server, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse")}
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
    again = schemaflow(project, "plan", env=env)
    assert (again.returncode, again.stdout) == (0, "No changes: the metastore matches the schemas (databases: ahead_db).\n")
    assert again.stderr == f"Reading {metastore_server} ...\n"
    table.write_text("table: ahead_db.t\ncolumns: [{name: id, type: bigint}, {name: n, type: int}]\n")
    changed = schemaflow(project, "plan", "--format", "json", env=env)
    assert changed.returncode == 2 and changed.stderr == f"Reading {metastore_server} ...\n"
    assert [(s["object"], s["kind"]) for s in json.loads(changed.stdout)["steps"]] == [("ahead_db.t", "add_columns")]

    # Nothing answers: the read begun in the background fails as a read does, once the files are parsed.
    gone = {**env, "SCHEMAFLOW_METASTORE_URI": f"thrift://127.0.0.1:{free_port()}"}
    unreachable = schemaflow(project, "plan", env=gone)
    assert unreachable.returncode == 1
    assert unreachable.stderr.splitlines()[0] == f"Reading {gone['SCHEMAFLOW_METASTORE_URI']} ..."
    assert unreachable.stderr.splitlines()[-1].startswith(
        f"error: cannot reach the Hive metastore ({gone['SCHEMAFLOW_METASTORE_URI']})")
    # A file that does not validate is the error, as without the read: the read is not waited for.
    table.write_text("table: ahead_db.t\ncolumns: [{name: id, type: bigint, kind: key}]\n")
    refused = schemaflow(project, "plan", env=gone)
    assert refused.returncode == 1 and "ahead_db/t.yaml:2:" in refused.stderr, refused.stderr
    assert "Reading" not in refused.stderr and "cannot reach" not in refused.stderr


def test_a_metastore_that_does_not_answer_plain_thrift_is_read_through_spark(
        new_metastore_server: NewServer, tmp_path: Path) -> None:
    framed = {"hive.metastore.thrift.framed.transport.enabled": "true"}
    with new_metastore_server(default_backend(), tmp_path / "server", settings=framed) as server:
        # The client learns of the framing where a cluster's clients do: hive-site.xml in Spark's conf dir.
        conf = tmp_path / "conf"
        conf.mkdir()
        (conf / "hive-site.xml").write_text(
            '<configuration><property><name>hive.metastore.thrift.framed.transport.enabled</name>'
            '<value>true</value></property></configuration>')
        if "SPARK_CONF_DIR" in os.environ:  # beside the Hive client the run's site gives Spark
            shutil.copy(Path(os.environ["SPARK_CONF_DIR"]) / "spark-defaults.conf", conf)
        project = tmp_path / "project"
        (project / "schemas" / "framed_db").mkdir(parents=True)
        (project / "schemas" / "framed_db" / "t.yaml").write_text("table: framed_db.t\ncolumns: [{name: id, type: int}]\n")
        env = {"SCHEMAFLOW_METASTORE_URI": server.uri, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse"),
               "SPARK_CONF_DIR": str(conf)}
        assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
        planned = schemaflow(project, "plan", env=env)
        assert (planned.returncode, planned.stdout) == (
            0, "No changes: the metastore matches the schemas (databases: framed_db).\n"), planned.stderr
        assert planned.stderr.splitlines()[:2] == [
            f"Reading {server.uri} ...", f"Starting Spark (local[2]) and connecting to {server.uri} ..."]
