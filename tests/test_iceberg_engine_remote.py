"""Iceberg tables as the engine teams run reads and writes them: Spark with Iceberg's own runtime
(``tests/iceberg_spark.py``) over the same metastore server as schemaflow, on Derby with the transaction tables.

Tables Spark's Iceberg made (transforms, format versions 1 and 2, a sort order, CTAS, rows Spark wrote) are
imported, planned "No changes", evolved by schemaflow through the CLI, and read back by Spark: columns and
types, the partition spec, the rows (a renamed column keeps its values), a view over one, and rows Spark
writes after the evolution. A Spark writer appending while schemaflow commits loses no row, with Iceberg's
table lock on and off. Iceberg's ``snapshot`` procedure is the oracle of the conversion in place: the same
files, row counts, partition values and rows (docs/concepts/objects.md lists what differs and why).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.iceberg_spark import IcebergSpark
from tests.metastore_server import lock_guards, metastore_setting
from tests.projects import schemaflow

pytestmark = [pytest.mark.remote, pytest.mark.iceberg_engine]


@pytest.fixture(scope="module")
def engine(metastore_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergSpark]:
    """Spark with Iceberg's runtime on the run's Derby server, taking Iceberg's table lock (its default)."""
    workdir = tmp_path_factory.mktemp("iceberg_engine")
    with IcebergSpark(metastore_server, workdir / "warehouse", workdir) as spark:
        yield spark


def _project(tmp_path: Path, database: str) -> Path:
    project = tmp_path / "project"
    (project / "schemas").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(f"databases: [{database}]\n" + metastore_setting())
    return project


def _env(uri: str, tmp_path: Path) -> dict[str, str]:
    return {"SCHEMAFLOW_METASTORE_URI": uri, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse")}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new))


def _described(engine: IcebergSpark, key: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A table's columns (name, type) and partition transforms, as Spark's DESCRIBE shows them."""
    rows = engine.sql(f"DESCRIBE TABLE {key}")
    columns, partitioning, part = [], [], False
    for row in rows:
        name = row["col_name"]
        if name.startswith("#"):
            part = name == "# Partitioning"
        elif part and name.startswith("Part "):
            partitioning.append(row["data_type"])
        elif name and not part:
            columns.append((name, row["data_type"]))
    return columns, partitioning


def test_tables_spark_made_are_imported_unchanged_then_evolved_and_read_back_by_spark(
        engine: IcebergSpark, metastore_server: str, tmp_path: Path) -> None:
    db = "spark_made"
    engine.sql(f"CREATE DATABASE {db}")
    engine.sql(f"CREATE TABLE {db}.events (id bigint, ts timestamp, kind string, v int) USING iceberg "
               "PARTITIONED BY (days(ts), bucket(4, id)) TBLPROPERTIES ('format-version'='2')")
    engine.sql(f"ALTER TABLE {db}.events WRITE ORDERED BY id")
    engine.sql(f"INSERT INTO {db}.events VALUES (1, timestamp'2024-01-01 10:00:00', 'open', 7), "
               "(2, timestamp'2024-01-02 11:00:00', 'click', 8), (3, timestamp'2024-01-02 12:00:00', 'open', 9)")
    engine.sql(f"CREATE TABLE {db}.legacy (id bigint, name string, amount decimal(10,2)) USING iceberg "
               "PARTITIONED BY (truncate(2, name)) TBLPROPERTIES ('format-version'='1')")
    engine.sql(f"INSERT INTO {db}.legacy VALUES (1, 'alpha', 1.50), (2, 'beta', 2.25)")
    engine.sql(f"CREATE TABLE {db}.summary USING iceberg PARTITIONED BY (kind) AS "
               f"SELECT kind, count(*) AS n FROM {db}.events GROUP BY kind")
    project, env = _project(tmp_path, db), _env(metastore_server, tmp_path)

    imported = schemaflow(project, "import", "--database", db, env=env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    events = project / "schemas" / db / "events.yaml"
    assert events.read_text() == (
        f"table: {db}.events\n"
        "format: iceberg\n"
        "columns:\n"
        "  - {name: id, type: bigint}\n"
        "  - {name: ts, type: timestamp}\n"
        "  - {name: kind, type: string}\n"
        "  - {name: v, type: int}\n"
        "partitioned_by: [day(ts), 'bucket(4, id)']\n"
        "sorted_by: [id ASC NULLS FIRST]\n"
        "properties: {format-version: '2', write.distribution-mode: range, write.parquet.compression-codec: zstd}\n")
    unchanged = schemaflow(project, "plan", env=env)
    assert (unchanged.returncode, unchanged.stdout) == (
        0, f"No changes: the metastore matches the schemas (databases: {db}).\n"), unchanged.stderr

    # Evolved by schemaflow: a rename by migration, a column added in the middle, a widening, a new partition
    # field and a column dropped by migration on the format-version 1 table (the field appended, as version 1 keeps
    # fields in place), a comment, a view.
    (project / "migrations").mkdir()
    (project / "migrations" / "0001_category.yaml").write_text(
        f"description: kind is a category\nchanges:\n  - rename_column: {{table: {db}.events, from: kind, to: category}}\n"
        f"  - drop_column: {{table: {db}.legacy, column: amount}}\n")
    _edit(events, "  - {name: kind, type: string}\n  - {name: v, type: int}\n",
          "  - {name: category, type: string}\n  - {name: note, type: string}\n  - {name: v, type: bigint}\n")
    legacy = project / "schemas" / db / "legacy.yaml"
    _edit(legacy, "partitioned_by: ['truncate(2, name)']", "partitioned_by: ['truncate(2, name)', 'bucket(2, id)']")
    _edit(legacy, "  - {name: amount, type: 'decimal(10,2)'}\n", "")
    _edit(project / "schemas" / db / "summary.yaml", f"table: {db}.summary\n",
          f"table: {db}.summary\ncomment: Events per kind\n")
    (project / "schemas" / db / "categories.yaml").write_text(
        f"view: {db}.categories\nsql: SELECT category, count(*) AS n FROM {db}.events GROUP BY category\n")
    assert schemaflow(project, "hash-migrations", env=env).returncode == 0
    applied = schemaflow(project, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    again = schemaflow(project, "plan", env=env)
    assert (again.returncode, again.stdout) == (
        0, f"No changes: the metastore matches the schemas (databases: {db}).\n"), again.stderr

    # Read back by Spark with Iceberg's runtime.
    assert _described(engine, f"{db}.events") == (
        [("id", "bigint"), ("ts", "timestamp"), ("category", "string"), ("note", "string"), ("v", "bigint")],
        ["days(ts)", "bucket(4, id)"])
    assert engine.sql(f"SELECT id, category, note, v FROM {db}.events ORDER BY id") == [
        {"id": 1, "category": "open", "note": None, "v": 7}, {"id": 2, "category": "click", "note": None, "v": 8},
        {"id": 3, "category": "open", "note": None, "v": 9}]
    assert _described(engine, f"{db}.legacy") == ([("id", "bigint"), ("name", "string")],
                                                  ["truncate(2, name)", "bucket(2, id)"])
    assert engine.sql(f"SELECT * FROM {db}.legacy ORDER BY id") == [{"id": 1, "name": "alpha"}, {"id": 2, "name": "beta"}]
    comment = [r for r in engine.sql(f"DESCRIBE TABLE EXTENDED {db}.summary") if r["col_name"] == "Comment"]
    assert comment == [{"col_name": "Comment", "comment": "", "data_type": "Events per kind"}]
    # Spark writes the evolved table, and the view over it reads both writers' rows.
    engine.sql(f"INSERT INTO {db}.events VALUES (4, timestamp'2024-01-03 09:00:00', 'click', 'by spark', 10000000000)")
    assert engine.sql(f"SELECT note, v FROM {db}.events WHERE id = 4") == [{"note": "by spark", "v": 10000000000}]
    assert engine.sql(f"SELECT * FROM {db}.categories ORDER BY category") == [
        {"category": "click", "n": 2}, {"category": "open", "n": 2}]
    assert engine.sql(f"SELECT count(*) AS n FROM {db}.events.snapshots") == [{"n": 2}]  # Spark's two appends


# Iceberg's writers without its lock (engine.hive.lock-enabled=false) rely on the server's compare-and-swap, which
# Iceberg requires for it (HIVE-26882): on a server without it (3.1), they are run with the lock alone. Run there
# without it, such a writer lost an append to schemaflow's commit (.ci/metastore_versions.py), as it would to another
# Iceberg writer's: docs/reference/metastore-versions.md says so.
WRITER_LOCKS = [pytest.param(True, id="lock")] + ([] if lock_guards() else [pytest.param(False, id="no-lock")])


@pytest.mark.parametrize("lock", WRITER_LOCKS)
def test_a_spark_writer_appending_while_schemaflow_commits_loses_nothing(
        lock: bool, metastore_server: str, tmp_path: Path) -> None:
    db = f"race_{'lock' if lock else 'nolock'}"
    with IcebergSpark(metastore_server, tmp_path / "warehouse", tmp_path / "engine", lock=lock) as engine:
        engine.sql(f"CREATE DATABASE {db}")
        engine.sql(f"CREATE TABLE {db}.t (id bigint, v string) USING iceberg TBLPROPERTIES ('format-version'='2')")
        project, env = _project(tmp_path, db), _env(metastore_server, tmp_path)
        assert schemaflow(project, "import", "--database", db, env=env).returncode == 0
        # A new partition field and a comment: a commit of new metadata that the writer's appends go on through.
        _edit(project / "schemas" / db / "t.yaml", f"table: {db}.t\n", f"table: {db}.t\ncomment: Raced\n")
        _edit(project / "schemas" / db / "t.yaml", "properties:", "partitioned_by: ['bucket(2, id)']\nproperties:")
        done, written, refused = threading.Event(), [], []

        def append() -> None:  # Spark's appends, one commit each, until schemaflow's apply has finished
            while not done.is_set() or len(written) < 3:
                row = len(written) + len(refused) + 1
                answer = engine.attempt(f"INSERT INTO {db}.t VALUES ({row}, 'row {row}')")
                (refused.append(answer["error"]) if "error" in answer else written.append(row))

        writer = threading.Thread(target=append)
        writer.start()
        try:
            applied = schemaflow(project, "apply", "--auto-approve", env=env)
            if applied.returncode != 0:  # a Spark commit won the swap: nothing of schemaflow's landed; apply again
                assert "changed since" in applied.stderr, applied.stdout + applied.stderr
                applied = schemaflow(project, "apply", "--auto-approve", env=env)
        finally:
            done.set()
            writer.join()
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert refused == []  # Iceberg retried every append a schemaflow commit beat
        assert len(written) >= 3
        assert engine.sql(f"SELECT id FROM {db}.t ORDER BY id") == [{"id": row} for row in written]
        assert _described(engine, f"{db}.t")[1] == ["bucket(2, id)"]
        assert [r["data_type"] for r in engine.sql(f"DESCRIBE TABLE EXTENDED {db}.t") if r["col_name"] == "Comment"] == [
            "Raced"]
        again = schemaflow(project, "plan", env=env)
        assert (again.returncode, again.stdout) == (
            0, f"No changes: the metastore matches the schemas (databases: {db}).\n"), again.stderr


def test_the_conversion_in_place_registers_what_icebergs_snapshot_procedure_registers(
        engine: IcebergSpark, metastore_server: str, tmp_path: Path) -> None:
    db = "convert_oracle"
    engine.sql(f"CREATE DATABASE {db}")
    engine.sql(f"CREATE TABLE {db}.sales (id bigint, amount double, name string) PARTITIONED BY (ds string) "
               "STORED AS PARQUET")
    engine.sql(f"INSERT INTO {db}.sales VALUES (1, 1.5, 'a', '2024-01-01'), (2, 2.5, 'b', '2024-01-02'), "
               "(3, 3.5, NULL, '2024-01-02')")
    engine.sql(f"INSERT INTO {db}.sales VALUES (4, 4.5, 'd', '2024-01-02')")  # a second file in one partition
    # The oracle: Iceberg's own procedure registers the same Parquet files in a new table, leaving the source.
    assert engine.sql(f"CALL spark_catalog.system.snapshot('{db}.sales', '{db}.sales_oracle')") == [
        {"imported_files_count": 3}]
    project, env = _project(tmp_path, db), _env(metastore_server, tmp_path)
    (project / "schemas" / db).mkdir()
    (project / "schemas" / db / "sales.yaml").write_text(
        f"table: {db}.sales\nformat: iceberg\ncolumns:\n  - {{name: id, type: bigint}}\n  - {{name: amount, type: double}}\n"
        "  - {name: name, type: string}\n  - {name: ds, type: string}\npartitioned_by: [ds]\n")
    applied = schemaflow(project, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f"convert table {db}.sales to Iceberg" in applied.stdout

    def files(key: str) -> list[tuple[str, int, dict]]:
        return sorted((r["file_path"], r["record_count"], r["partition"]) for r in engine.sql(
            f"SELECT file_path, record_count, partition FROM {key}.files"))

    converted, oracle = files(f"{db}.sales"), files(f"{db}.sales_oracle")
    assert len(converted) == 3 and converted == oracle
    rows = engine.sql(f"SELECT * FROM {db}.sales ORDER BY id")
    assert rows == engine.sql(f"SELECT * FROM {db}.sales_oracle ORDER BY id")
    assert [(r["id"], r["name"], r["ds"]) for r in rows] == [
        (1, "a", "2024-01-01"), (2, "b", "2024-01-02"), (3, None, "2024-01-02"), (4, "d", "2024-01-02")]
    assert _described(engine, f"{db}.sales") == _described(engine, f"{db}.sales_oracle")
    # The same name mapping (field ids by column name); the properties that differ are those the docs explain.
    ours, theirs = ({r["key"]: r["value"] for r in engine.sql(f"SHOW TBLPROPERTIES {key}")}
                    for key in (f"{db}.sales", f"{db}.sales_oracle"))
    mapping = "schema.name-mapping.default"
    assert json.loads(ours.pop(mapping)) == json.loads(theirs.pop(mapping))
    assert sorted(set(ours) ^ set(theirs)) == [
        "gc.enabled", "schemaflow.applied_at", "schemaflow.applied_state", "schemaflow.version", "snapshot",
        "write.data.path", "write.metadata.path", "write.parquet.compression-codec"]
    assert (theirs["gc.enabled"], theirs["snapshot"]) == ("false", "true")
    assert ours["write.metadata.path"].endswith(f"/{db}.db/sales/_iceberg/metadata")
    # Spark appends to the converted table, and Parquet readers of the backup still see the table as it was.
    engine.sql(f"INSERT INTO {db}.sales VALUES (5, 5.5, 'e', '2024-01-03')")
    assert engine.sql(f"SELECT count(*) AS n FROM {db}.sales") == [{"n": 5}]
    assert engine.sql(f"SELECT count(*) AS n FROM {db}.sales_backup_") == [{"n": 4}]
