"""The live state read as hostile input, bounded per command and not per table only; and a review between git refs
that dials no address the change under review wrote (no JVM here: tests/test_live_bounds_remote.py registers the
same tables on a metastore server and runs the commands).

Whoever can register a table in a managed database (another team's Spark job) writes its ``metadata_location``,
which every later command reads: each route here is one such writer's, or a pull request's author's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest

from schemaflow.background import Background
from schemaflow.catalog import iceberg_metadata
from schemaflow.catalog.iceberg_metadata import MAX_METADATA_BYTES, Unreadable, read_metadata
from schemaflow.catalog.metadata_bounds import COMMAND_BYTES, COMMAND_SECONDS, MetadataBudget, metadata_bounds
from schemaflow.catalog.hive.thrift_data import to_model
from schemaflow.model import Table
from tests.gitrepos import commit, init_repo
from tests.probes import Listener, bytes_read
from tests.projects import schemaflow

MARKER = "s3cr3t-MARKER"
# Iceberg's metadata of a table of one column, as a writer's commit leaves it.
METADATA = {"format-version": 2, "table-uuid": "9f1c", "location": "/lake/db.db/t", "last-column-id": 1,
            "current-schema-id": 0, "schemas": [{"type": "struct", "schema-id": 0,
                                                 "fields": [{"id": 1, "name": "a", "required": False, "type": "int"}]}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}], "properties": {}}


def entry(name: str, location: str) -> dict[str, Any]:
    """A metastore entry of an Iceberg table (a Thrift ``Table`` as data) whose metadata is at ``location``."""
    return {"dbName": "db", "tableName": name, "tableType": "EXTERNAL_TABLE",
            "parameters": {"table_type": "ICEBERG", "metadata_location": location},
            "sd": {"cols": [{"name": "a", "type": "int"}]}}


def live(name: str, location: str, storage: tuple[str, ...] = ("file:/lake/db.db",)) -> Table:
    table = to_model(entry(name, location), storage)
    assert isinstance(table, Table)
    return table


def test_a_file_that_fails_as_it_is_read_is_one_line_naming_the_kind_of_failure() -> None:
    # /proc/self/mem is a regular file that opens, and fails at the first read: an OSError, once a traceback.
    table = live("mem", "/proc/self/mem")
    assert table.iceberg is None
    assert table.unreadable == ("the metadata file '/proc/self/mem' cannot be read (Input/output error); plan where "
                                "the table's storage is reachable (for s3:// or hdfs://, with pyiceberg's file IO: "
                                "schemaflow's extra iceberg), and see that its metastore entry names its own metadata "
                                "file")
    assert live("nul", "/lake/a\0b.json").unreadable.startswith(
        "the metadata location '/lake/a\\x00b.json' holds a NUL character, which no path holds; ")


READ_ONE = """
import sys
from schemaflow.catalog.hive.thrift_data import to_model
data = {"dbName": "db", "tableName": "t", "tableType": "EXTERNAL_TABLE", "sd": {},
        "parameters": {"table_type": "ICEBERG", "metadata_location": sys.argv[1]}}
print(to_model(data, (sys.argv[2],)).unreadable)
"""


@pytest.mark.parametrize("location, database", [
    ("file:pipe.metadata.json", "file:{tmp}/db.db"),
    ("pipe.metadata.json", "{tmp}/db.db"),
    ("file:./pipe.metadata.json", "file:{tmp}/db.db"),
])
def test_a_pipe_reached_through_a_relative_location_is_refused_without_waiting(
        tmp_path: Path, location: str, database: str) -> None:
    # Relative to where the job runs: once handed to pyiceberg's file IO (the database's storage being a local one
    # too), which opened the pipe and waited for a writer for good. Nobody writes this one; the timeout only
    # guards the suite against a wait, and nothing is asserted on time.
    os.mkfifo(tmp_path / "pipe.metadata.json")
    ran = subprocess.run([sys.executable, "-c", READ_ONE, location, database.format(tmp=tmp_path)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert ran.stdout == (f"the metadata location {location!r} is a relative path, and a metastore's locations are "
                          "absolute (/path, file:/path); see that its metastore entry names its own metadata file\n"), \
        ran.stderr


def test_pyiceberg_is_handed_no_location_schemaflow_did_not_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyiceberg.io

    asked: list[str] = []
    monkeypatch.setattr(pyiceberg.io, "load_file_io", lambda properties, location: asked.append(location))
    said = {location: live("t", location, storage).unreadable for location, storage in [
        ("file:relative/m.json", ("file:/lake/db.db",)),
        ("relative/m.json", ("/lake/db.db",)),
        ("file://elsewhere/lake/m.json", ("file:/lake/db.db",)),
        ("hf://datasets/lake/m.json", ("hf://datasets/lake",)),  # a scheme of pyiceberg's, not a database's storage
        ("s3:relative/m.json", ("s3:relative",)),
    ]}
    assert asked == []
    assert said["file://elsewhere/lake/m.json"].startswith(
        "the metadata location 'file://elsewhere/lake/m.json' names the host 'elsewhere': a local file is file:/path;")
    assert said["hf://datasets/lake/m.json"].startswith(
        "the metadata location 'hf://datasets/lake/m.json' is not a local path nor on object storage or HDFS (abfs, "
        "abfss, gs, hdfs, oss, s3, s3a, s3n, viewfs, wasb, wasbs): schemaflow does not read it;")
    assert said["s3:relative/m.json"].startswith("the metadata location 's3:relative/m.json' names no bucket or host: "
                                                 "schemaflow does not read it;")


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``METADATA`` with the value at ``path`` (keys and indexes) replaced."""
    data = json.loads(json.dumps(METADATA))
    *parents, last = path
    node = data
    for step in parents:
        node = node[step]
    node[last] = value
    return data


@pytest.mark.parametrize("content", [
    json.dumps(_with(("format-version",), MARKER)),                                   # int() of a text
    json.dumps(_with(("schemas", 0, "fields", 0, "type"), MARKER)),                    # a type Spark has not
    json.dumps(_with(("partition-specs", 0, "fields"), [{"source-id": MARKER, "transform": "identity",
                                                          "field-id": 1000, "name": "p"}])),  # a key looked up
    json.dumps(_with(("partition-specs", 0, "fields"), [{"source-id": 1, "transform": f"bucket[{MARKER}]",
                                                          "field-id": 1000, "name": "p"}])),  # a number in a text
    json.dumps(_with(("default-spec-id",), MARKER)),                                  # an id that is not there
    json.dumps({MARKER: 1}),                                                          # a field that is not Iceberg's
    json.dumps(_with(("schemas", 0, "fields", 0, "name"), {MARKER: 1})),               # a name that is not a text
    json.dumps(_with(("properties",), {"k": [MARKER]})),
    '{"format-version": 2, "' + MARKER + '\\q": 1}',                                  # a bad escape
    '{"format-version": 2, "x": "' + MARKER + '"} trailing ' + MARKER,                # extra data
    b'{"x": "\xff'.decode("latin-1") + MARKER + '"}',                                 # not UTF-8
    '[' * 100_000 + MARKER,
    '{"format-version": 1' + "0" * 5000 + "}",                                        # past int()'s digits
    '{"format-version": 1e400, "' + MARKER + '": 1}',                                 # infinity
])
def test_a_metadata_files_content_is_never_quoted(tmp_path: Path, content: str) -> None:
    # The file can be any file the job may read (a secret one): what is wrong with it is said in words of its own.
    path = tmp_path / "v1.metadata.json"
    path.write_bytes(content.encode("latin-1"))
    reason = live("t", str(path)).unreadable
    assert reason is not None and MARKER not in reason and "\n" not in reason
    assert reason.startswith(f"the metadata file {str(path)!r} is ")


@pytest.fixture
def large_files(tmp_path: Path) -> Iterator[list[Path]]:
    """Twelve metadata files of 63 MiB each (each within the bound of one file), sparse: nothing written to disk."""
    files = []
    for number in range(12):
        path = tmp_path / f"{number:02}.metadata.json"
        with path.open("wb") as file:
            file.truncate(63 * 2**20)
        files.append(path)
    yield files


def test_the_metadata_reads_of_a_command_stop_at_its_budget(large_files: list[Path], tmp_path: Path) -> None:
    assert 63 * 2**20 < MAX_METADATA_BYTES < 12 * 63 * 2**20
    small = tmp_path / "small.metadata.json"
    small.write_text(json.dumps(METADATA))
    before = bytes_read()
    with metadata_bounds() as budget:
        tables = [live(f"t{number:02}", str(path)) for number, path in enumerate(large_files)]
        after_them = live("small", str(small))
    read = bytes_read() - before
    # Eight files fit in the budget, none of the four after them: counted by the reader and by the kernel.
    fit = COMMAND_BYTES // (63 * 2**20)
    assert [r.bytes for r in budget.reads if r.bytes] == [63 * 2**20] * fit + [len(small.read_bytes())]
    assert read < COMMAND_BYTES + 2**20 < len(large_files) * 63 * 2**20
    assert all("is not JSON" in (t.unreadable or "") for t in tables[:fit])
    left = COMMAND_BYTES - fit * 63 * 2**20
    for table in tables[fit:]:
        assert table.iceberg is None
        assert table.unreadable == (
            f"not read: its metadata file holds more than the {left:,} bytes left of the {COMMAND_BYTES:,} "
            f"schemaflow reads in one command after the metadata of {fit} tables read before it (the largest: db.t00, "
            "db.t01, db.t02); see that those tables belong in the database and that their entries name their own "
            "metadata files (any writer can register one naming a large file): drop the ones nobody owns, or have "
            "their owners expire old snapshots; then plan again")
    # A table whose file fits in what is left is read: the budget refuses what it cannot hold, not what comes late.
    assert after_them.iceberg is not None and after_them.unreadable is None


def test_once_the_budget_is_spent_no_file_is_opened(large_files: list[Path]) -> None:
    budget = MetadataBudget(bytes=2 * 63 * 2**20)
    for number, path in enumerate(large_files[:2]):
        with budget.reading(f"db.t{number}") as allowance:
            with pytest.raises(Unreadable, match="is not JSON"):
                read_metadata(str(path), (), allowance)
    with pytest.raises(Unreadable) as spent:
        with budget.reading("db.late"):
            raise AssertionError("not reached: nothing is left to read with")
    assert str(spent.value) == (f"not read: the metadata of 2 tables read before it (the largest: db.t0, db.t1) took "
                                f"all the {COMMAND_BYTES:,} bytes of metadata schemaflow reads in one command")


def test_the_time_of_a_commands_reads_is_bounded_too(tmp_path: Path) -> None:
    path = tmp_path / "v1.metadata.json"
    path.write_text(json.dumps(METADATA))
    now = [0.0]

    def clock() -> float:  # each read takes 50 s (object storage answering slowly)
        now[0] += 50.0
        return now[0]

    budget = MetadataBudget(clock=clock)
    reads = 0
    with pytest.raises(Unreadable) as spent:
        while True:
            with budget.reading(f"db.t{reads}") as allowance:
                read_metadata(str(path), (), allowance)
            reads += 1
    assert reads == 4  # 200 s of the 180: the fifth is not started
    assert str(spent.value) == (f"not read: the metadata of 4 tables read before it (the slowest: db.t0, db.t1, db.t2) took "
                                f"all the {COMMAND_SECONDS:g} s schemaflow spends reading metadata in one command")
    assert spent.value.advice.endswith("then plan again")


def test_a_read_in_the_background_spends_the_commands_budget(large_files: list[Path]) -> None:
    # plan reads the metastore in a thread while it parses the project's files: the same command, the same budget.
    with metadata_bounds() as budget:
        Background(lambda: live("early", str(large_files[0])), "metastore-read").result()
        live("late", str(large_files[1]))
    assert [(r.table, r.bytes) for r in budget.reads] == [("db.early", 63 * 2**20), ("db.late", 63 * 2**20)]
    with metadata_bounds() as other:  # the next command starts afresh
        assert other is not budget and other.bytes == COMMAND_BYTES


def test_a_commit_is_bounded_by_its_file_alone(large_files: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # apply's commits read the tables its reviewed plan changes again: a budget its plan spent does not stop them.
    with metadata_bounds() as budget:
        budget.bytes = 0
        with pytest.raises(Unreadable, match="is not JSON"):
            read_metadata(str(large_files[0]))
    monkeypatch.setattr(iceberg_metadata, "MAX_METADATA_BYTES", 2**20)
    with pytest.raises(Unreadable, match=r"has 66,060,288 bytes, more than the 1,048,576 schemaflow reads$"):
        read_metadata(str(large_files[0]))


@pytest.fixture
def listeners() -> Iterator[tuple[Listener, Listener]]:
    pair = Listener(), Listener()
    yield pair
    for listener in pair:
        listener.close()


EVENTS = "table: reviewed.events\ncolumns: [{name: id, type: int}]\npartitioned_by: [{name: ds, type: string}]\n"


def reviewed_change(root: Path, base_uri: str | None, head_uri: str | None) -> Path:
    """A repository whose main holds a partitioned table, and settings naming ``base_uri`` as the metastore, and
    whose working tree adds a column to it (a change whose plan asks for the table's partition count) and names
    ``head_uri``, as a pull request can."""
    def settings(uri: str | None) -> str:
        return "databases: [reviewed]\n" + (f"metastore: {{uri: '{uri}'}}\n" if uri else "")

    repo = init_repo(root)
    (root / "schemas" / "reviewed").mkdir(parents=True)
    (root / "schemas" / "reviewed" / "events.yaml").write_text(EVENTS)
    (root / "schemaflow.yaml").write_text(settings(base_uri))
    commit(repo, "base")
    (root / "schemas" / "reviewed" / "events.yaml").write_text(EVENTS.replace(
        "[{name: id, type: int}]", "[{name: id, type: int}, {name: b, type: string}]"))
    (root / "schemaflow.yaml").write_text(settings(head_uri))
    return root


def review(project: Path, operator: str | None, *refs: str) -> subprocess.CompletedProcess[str]:
    """``plan --base main`` (or ``refs``) of ``project`` as the pull-request job runs it, its comment in markdown;
    ``operator``: the job's SCHEMAFLOW_METASTORE_URI (None: unset)."""
    return schemaflow(project, "plan", *(refs or ("--base", "main")), "--format", "markdown",
                      env={"SCHEMAFLOW_METASTORE_URI": operator})


def test_a_review_dials_no_metastore_the_change_under_review_names(
        tmp_path: Path, listeners: tuple[Listener, Listener]) -> None:
    head, _ = listeners
    project = reviewed_change(tmp_path / "project", None, head.uri)
    reviewed = review(project, None)
    assert reviewed.returncode == 2, reviewed.stderr
    assert head.accepted == 0
    assert reviewed.stderr == (
        "Planning the working tree against main from git, without a metastore: partition counts are unknown (a review "
        "reads no metastore the change under review names: set SCHEMAFLOW_METASTORE_URI in the job, or merge "
        "metastore.uri first).\n")
    assert "without a metastore: partition counts are unknown" in reviewed.stdout
    # So too between two commits, the head's settings naming it.
    commit(git.Repo(project), "head")
    assert review(project, None, "--base", "main~1", "--head", "main").returncode == 2
    assert head.accepted == 0


def test_a_review_reads_the_operators_metastore_or_the_one_the_base_names(
        tmp_path: Path, listeners: tuple[Listener, Listener]) -> None:
    head, operator = listeners
    reviewed = review(reviewed_change(tmp_path / "project", None, head.uri), operator.uri)
    assert reviewed.returncode == 2, reviewed.stderr
    assert (head.accepted, operator.accepted > 0) == (0, True)
    # The operator's address is a secret of the job: named by its variable, never written out.
    said = "with partition counts from the metastore SCHEMAFLOW_METASTORE_URI names"
    assert reviewed.stderr == f"Planning the working tree against main from git, {said}.\n"
    assert said.replace("_", "\\_") in reviewed.stdout  # the comment, as markdown
    assert operator.uri not in reviewed.stdout + reviewed.stderr

    dialled = operator.accepted
    reviewed = review(reviewed_change(tmp_path / "merged", operator.uri, head.uri), None)
    assert reviewed.returncode == 2, reviewed.stderr
    assert (head.accepted, operator.accepted > dialled) == (0, True)
    assert reviewed.stderr == (f"Planning the working tree against main from git, with partition counts from "
                               f"{operator.uri} (the settings at main).\n")
