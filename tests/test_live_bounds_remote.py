"""What another writer of a metastore server registers, read by every command on its database: each table whose
metadata cannot be read is one line and the exit codes of any unreadable metadata, whatever the failure; one
command reads at most its budget of metadata, whatever the number of tables; a commit writes no metadata file
where the file it read sends it; and a review between git refs reads partition counts from the operator's
metastore, never from the one the change under review names."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaflow.catalog.metadata_bounds import COMMAND_BYTES, metadata_bounds
from tests import inprocess
from tests.conversions import ORDERS, on_server, write_partitions
from tests.gitrepos import commit, init_repo
from tests.metastore_server import metastore_setting, other_client
from tests.probes import Listener, bytes_read
from tests.projects import schemaflow

pytestmark = pytest.mark.remote

MARKER = "s3cr3t-MARKER"


def iceberg_table(key: str) -> str:
    return f"table: {key}\nformat: iceberg\ncolumns:\n  - {{name: id, type: bigint}}\n  - {{name: v, type: int}}\n"


def applied(tmp_path: Path, server: str, database: str, names: tuple[str, ...]) -> tuple[Path, dict[str, str]]:
    """A project of the Iceberg tables ``names`` in ``database``, applied on ``server``; and its environment."""
    project = tmp_path / "project"
    (project / "schemas" / database).mkdir(parents=True)
    for name in names:
        (project / "schemas" / database / f"{name}.yaml").write_text(iceberg_table(f"{database}.{name}"))
    env = on_server(project, server, tmp_path)
    done = schemaflow(project, "apply", "--auto-approve", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return project, env


def register(spark, server: str, database: str, like: str, locations: dict[str, str]) -> None:
    """Register, as another writer does, a table named after each key of ``locations`` in ``database``: a copy of
    ``like``'s metastore entry (its stamps too: as if schemaflow had applied it) naming that metadata location."""
    with other_client(spark, server) as other:
        entry = other.msc.getTable(database, like)
        for name, location in locations.items():
            copy = entry.deepCopy()
            copy.setTableName(name)
            copy.getParameters().put("metadata_location", location)
            other.msc.createTable(copy)


def test_a_table_whose_metadata_fails_to_read_is_one_line_in_every_command(
        metastore_server: str, tmp_path: Path, spark) -> None:
    names = ("clicks", "mem", "zero", "pipe", "secret")
    project, env = applied(tmp_path, metastore_server, "bounds_db", names)
    os.mkfifo(project / "pipe.metadata.json")  # beside where the job runs, and nobody writes it
    (tmp_path / "secret.json").write_text(json.dumps({"format-version": MARKER, "token": MARKER}))
    hostile = {"mem": "/proc/self/mem", "zero": "/dev/zero", "pipe": "file:pipe.metadata.json",
               "secret": str(tmp_path / "secret.json")}
    reasons = {"mem": "cannot be read (Input/output error)", "zero": "is not a regular file",
               "pipe": "is a relative path, and a metastore's locations are absolute",
               "secret": "is not an Iceberg table's metadata (TypeError: a field holds another kind of value"}
    with other_client(spark, metastore_server) as other:  # another writer points schemaflow's tables elsewhere
        for name, location in hostile.items():
            entry = other.msc.getTable("bounds_db", name)
            entry.getParameters().put("metadata_location", location)
            other.msc.alter_table("bounds_db", name, entry)
    registered = parameters(spark, metastore_server, names)

    def lines(said: str, name: str) -> list[str]:
        return [line for line in said.splitlines() if f"bounds_db.{name}" in line and reasons[name] in line]

    outputs = {}
    for command, code in ((("plan",), 1), (("apply", "--auto-approve"), 1), (("drift",), 2)):
        ran = schemaflow(project, *command, env=env)  # each would have waited on the pipe for good: its timeout guards
        said = outputs[command[0]] = ran.stdout + ran.stderr
        assert ran.returncode == code and "Traceback" not in said, said
        for name, location in hostile.items():
            # plan's blocked step; apply's too, and its error listing the blocked steps; drift's line.
            found = lines(said, name)
            assert len(found) == (2 if command[0] == "apply" else 1), said
            assert all(repr(location) in line for line in found), found
        assert "bounds_db.clicks" not in said or command[0] == "apply"  # the readable table: nothing to do
    assert "bounds_db.mem: not compared, its own metadata could not be read: the metadata file '/proc/self/mem' " \
        "cannot be read (Input/output error); plan where the table's storage is reachable" in outputs["drift"]

    imported = schemaflow(project, "import", "--database", "bounds_db", "--out", str(tmp_path / "imported"), env=env)
    assert imported.returncode == 0 and "Traceback" not in imported.stdout + imported.stderr, imported.stderr
    for name in hostile:  # left alone, as every table whose metadata is not read, saying why
        [line] = lines(imported.stdout, name)
        assert line.startswith(f"not managed: bounds_db.{name} (its own metadata could not be read: ")
    snapshot = schemaflow(project, "snapshot", "--out", str(tmp_path / "live.json"), env=env)
    assert snapshot.returncode == 0 and "Traceback" not in snapshot.stderr, snapshot.stderr
    assert all(len(lines(snapshot.stderr, name)) == 1 for name in hostile), snapshot.stderr
    history = schemaflow(project, "history", env=env)
    assert history.returncode == 0 and "Traceback" not in history.stdout + history.stderr, history.stderr
    everything = "".join(outputs.values()) + imported.stdout + imported.stderr + snapshot.stderr + history.stdout
    assert MARKER not in everything + (tmp_path / "live.json").read_text()
    assert parameters(spark, metastore_server, names) == registered  # nothing was written to any of them


def parameters(spark, server: str, names: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """The metastore's parameters of each table of ``bounds_db`` named, as they are now."""
    with other_client(spark, server) as other:
        return {name: {key: value for key, value in other.msc.getTable("bounds_db", name).getParameters().items()}
                for name in names}


def test_a_command_reads_at_most_its_budget_of_metadata_however_many_tables_name_large_files(
        metastore_server: str, tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    project, env = applied(tmp_path, metastore_server, "budget_db", ("clicks",))
    size = 63 * 2**20  # within the bound of one file
    large = {f"big{number:02}": str(tmp_path / f"{number:02}.metadata.json") for number in range(24)}
    for path in large.values():
        with open(path, "wb") as file:
            file.truncate(size)  # sparse: nothing written, each read in full
    register(spark, metastore_server, "budget_db", "clicks", large)
    (project / "schemas" / "budget_db" / "big23.yaml").write_text(iceberg_table("budget_db.big23"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    before = bytes_read()
    with metadata_bounds() as budget:  # the command's own: plan runs in this process, and holds it
        ran = inprocess.schemaflow("--project", str(project), "plan")
    read = bytes_read() - before
    assert ran.code == 1 and "Traceback" not in ran.said, ran.said  # big23 is declared: its step is blocked
    assert read < COMMAND_BYTES + 32 * 2**20 < len(large) * size  # by the kernel's count: not 24 files, 8
    fit = COMMAND_BYTES // size
    assert sum(r.bytes for r in budget.reads) <= COMMAND_BYTES  # and by the budget's own
    whole = {r.table for r in budget.reads if r.bytes == size}
    assert len(whole) == fit
    unread = {f"budget_db.{name}" for name in large} - whole
    for key in unread:  # each named, in one line saying the budget was spent and what to do
        [line] = [line for line in ran.said.splitlines() if key in line and "not read: its metadata file holds more "
                  "than the" in line]
        assert "then plan again" in line, line
    assert len(unread) == len(large) - fit
    [step] = [line for line in ran.out.splitlines() if line.startswith("! 1. ")]
    assert "budget_db.big23" in step and "its Iceberg metadata file could not be read here: " in step, step
    # The project's own table fits in what is left, whenever it is read: its plan is unchanged.
    assert "budget_db.clicks" not in ran.said


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener()
    yield made
    made.close()


def test_a_review_reads_partition_counts_from_the_operators_metastore_and_none_from_the_heads(
        metastore_server: str, tmp_path: Path, spark, listener: Listener) -> None:
    project = tmp_path / "project"
    (project / "schemas" / "hint_db").mkdir(parents=True)
    orders = project / "schemas" / "hint_db" / "orders.yaml"
    orders.write_text(ORDERS.replace("conv_db.orders", "hint_db.orders"))
    (project / ".gitignore").write_text(".schemaflow/\n")
    env = on_server(project, metastore_server, tmp_path)
    assert schemaflow(project, "apply", "--auto-approve", env=env).returncode == 0
    write_partitions(spark, metastore_server, "hint_db.orders", 3, "parquet")
    commit(init_repo(project), "base")
    # The pull request: a column added, and its settings naming an address of its author's.
    orders.write_text(orders.read_text().replace("  - {name: note, type: string}\n",
                                                 "  - {name: note, type: string}\n  - {name: extra, type: string}\n"))
    (project / "schemaflow.yaml").write_text(metastore_setting(listener.uri))

    reviewed = schemaflow(project, "plan", "--base", "main", "--format", "markdown",
                          env={"SCHEMAFLOW_METASTORE_URI": metastore_server})
    assert reviewed.returncode == 2, reviewed.stderr
    assert listener.accepted == 0
    assert "table only: 3 partitions keep their old column list" in reviewed.stdout
    assert reviewed.stderr == ("Planning the working tree against main from git, with partition counts from the "
                               "metastore SCHEMAFLOW_METASTORE_URI names.\n")
    assert metastore_server not in reviewed.stdout + reviewed.stderr


def test_a_commit_writes_no_metadata_file_where_the_file_it_read_sends_it(
        metastore_server: str, tmp_path: Path, spark) -> None:
    project, env = applied(tmp_path, metastore_server, "commit_db", ("clicks",))
    # Another writer registers the table's own metadata again, its location moved to a bucket of theirs: the next
    # metadata file goes to <location>/metadata, written with the job's keys.
    with other_client(spark, metastore_server) as other:
        entry = other.msc.getTable("commit_db", "clicks")
        metadata = json.loads(Path(entry.getParameters().get("metadata_location").removeprefix("file:")).read_text())
        moved = tmp_path / "00001-moved.metadata.json"
        moved.write_text(json.dumps(metadata | {"location": "s3://attacker-bucket/clicks"}))
        entry.getParameters().put("metadata_location", str(moved))
        other.msc.alter_table("commit_db", "clicks", entry)
    table = project / "schemas" / "commit_db" / "clicks.yaml"
    table.write_text(table.read_text() + "  - {name: extra, type: string}\n")

    refused = schemaflow(project, "apply", "--auto-approve", env=env)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1 and "Traceback" not in said, said
    assert ("commit_db.clicks: its next metadata file would go where its metadata says, and the metadata file "
            "'s3://attacker-bucket/clicks/metadata/00002-") in said
    assert "is not on the storage its database is on" in said and "nothing was committed" in said
    with other_client(spark, metastore_server) as other:
        assert other.msc.getTable("commit_db", "clicks").getParameters().get("metadata_location") == str(moved)
