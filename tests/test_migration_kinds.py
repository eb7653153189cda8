"""A migration file naming tables of several kinds, applied through a real SparkSession and metastore (issue 57 item 3,
issue 62 item 2): one project holding a table of every kind, two migrations that between them pair every kind with
every other (a Hive table changed in place, a Hive table and a data-source table changed by a rewrite, an Iceberg
table changed by a commit, a Parquet table converted to Iceberg). After each apply every table the migration names
records it, the next plan has nothing to do (no merged migration ever needs an edit), and the rows read back as the
migration says, through Spark for the Hive and data-source tables and through pyiceberg for the Iceberg ones."""
from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

from schemaflow.apply.executor import apply_plan
from schemaflow.model import Table
from schemaflow.plan.backups import BackupDrops
from schemaflow.workflow import hash_migrations
from tests.iceberg_writer import OtherWriter
from tests.projects import plan, write_project

pytestmark = pytest.mark.spark

DB = "@DB@"
STORAGE = {  # each table: how it is stored
    "hive": "format: textfile",                                # a Hive table: renamed and dropped in place
    "hive_rw": "format: parquet\nrewrite: when_values_hide",  # a Hive table: renamed by a rewrite
    "hive_rw2": "format: parquet\nrewrite: when_values_hide",
    "csv": "using: csv",                                       # data-source tables: by a rewrite
    "pq": "using: parquet",
    "ice": "format: iceberg",                                  # an Iceberg commit
    "conv": "using: parquet",                                  # converted to Iceberg by the second migration
    "hp": "format: parquet",  # renamed in place (its files keep the old name), then converted to Iceberg: by copying
}
ROWS = [(1, "one", "x"), (2, None, "y"), (3, "three", None)]
# Between them, the two migrations name every pair of kinds in one file.
MIGRATIONS = {
    "migrations/0001_kinds.yaml": """\
description: Rename a of a Hive table in place, of a Hive and a csv table by rewrites, and of an Iceberg table
changes:
  - rename_column: {table: @DB@.hive, from: a, to: a1}
  - rename_column: {table: @DB@.hive_rw, from: a, to: a1}
  - rename_column: {table: @DB@.csv, from: a, to: a1}
  - rename_column: {table: @DB@.ice, from: a, to: a1}
  - rename_column: {table: @DB@.hp, from: a, to: a1}
""",
    "migrations/0002_kinds.yaml": """\
description: Beside the conversion of conv to Iceberg, change a table of every other kind
changes:
  - drop_column: {table: @DB@.hive, column: c}
  - rename_column: {table: @DB@.hive_rw2, from: a, to: a2}
  - drop_column: {table: @DB@.pq, column: c}
  - rename_column: {table: @DB@.ice, from: c, to: c2}
  - accept_loss: {table: @DB@.conv, column: a}
""",
}
# The columns each table declares before the migrations, after the first, and after the second.
COLUMNS = [
    {name: ("id", "a", "c") for name in STORAGE},
    {**{name: ("id", "a", "c") for name in STORAGE},
     **{name: ("id", "a1", "c") for name in ("hive", "hive_rw", "csv", "ice", "hp")}},
    {**{name: ("id", "a", "c") for name in ("csv", "conv")}, "hive": ("id", "a1"), "hive_rw": ("id", "a1", "c"),
     "csv": ("id", "a1", "c"), "hive_rw2": ("id", "a2", "c"), "pq": ("id", "a"), "ice": ("id", "a1", "c2"),
     "hp": ("id", "a1", "c")},
]


def _project(tmp_path, db: str, stage: int):
    files = {}
    for name, storage in STORAGE.items():
        if stage == 2 and name in ("conv", "hp"):
            storage = "format: iceberg"
        columns = "".join(f"\n  - {{name: {c}, type: {'int' if c == 'id' else 'string'}}}" for c in COLUMNS[stage][name])
        files[f"schemas/{db}/{name}.yaml"] = f"table: {db}.{name}\n{storage}\ncolumns:{columns}\n"
    files.update({path: text.replace(DB, db) for path, text in list(MIGRATIONS.items())[:stage]})
    project = write_project(tmp_path, files)
    hash_migrations(project)
    return project


def _rows(spark, metastore, db: str, name: str, columns: tuple[str, ...]) -> list[tuple]:
    """The table's rows, as its readers see them: through pyiceberg for an Iceberg table, else through Spark."""
    live = metastore.read((db,)).get(f"{db}.{name}")
    assert isinstance(live, Table)
    if live.format == "iceberg":
        location = metastore.msc.getTable(db, name).getParameters().get("metadata_location")
        found = StaticTable.from_metadata(location).scan().to_arrow().to_pylist()
        return sorted((tuple(r[c] for c in columns) for r in found), key=repr)
    return sorted((tuple(r) for r in spark.sql(f"SELECT {', '.join(columns)} FROM {db}.{name}").collect()), key=repr)


def test_every_pair_of_kinds_in_one_migration_is_recorded_on_each_table_and_the_next_plan_is_empty(
        tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    apply_plan(plan(_project(tmp_path, db, 0), metastore), metastore)
    for name in STORAGE:
        key = f"{db}.{name}"
        if name == "ice":
            table = OtherWriter(metastore).load_table(key)
            table.append(pa.Table.from_pylist([dict(zip(("id", "a", "c"), r, strict=True)) for r in ROWS],
                                              schema=table.schema().as_arrow()))
        else:
            values = ", ".join("(" + ", ".join("NULL" if v is None else repr(v) for v in r) + ")" for r in ROWS)
            spark.sql(f"INSERT INTO {key} VALUES {values}")

    expected = {name: ROWS for name in STORAGE}
    for stage, migration in ((1, "0001_kinds"), (2, "0002_kinds")):
        project = _project(tmp_path, db, stage)
        applying = plan(project, metastore, allow_destructive=True, drop_backups=BackupDrops(copies=True))
        assert not applying.blocked, [(s.summary, s.blocked) for s in applying.blocked]
        named = {c.split("table: ")[1].split(",")[0].split(".")[1] for c in MIGRATIONS[f"migrations/{migration}.yaml"]
                 .replace(DB, db).splitlines() if "table: " in c}
        # (Beside the backups of earlier rewrites, which the plan is given leave to drop: a rewrite needs the name.)
        steps = {s.object: s for s in applying.steps if not s.object.endswith("_backup_")}
        assert set(steps) == {f"{db}.{name}" for name in named | ({"hp"} if stage == 2 else set())}
        if stage == 2:
            # Its files hold a, which the table no longer has: Iceberg cannot register them, so its rows are copied.
            assert steps[f"{db}.hp"].kind == "rewrite_table" and "which the table no longer has (renamed or dropped " \
                "since the file was written)" in steps[f"{db}.hp"].summary
        apply_plan(applying, metastore)

        live = metastore.read((db,))
        for name in named:
            assert migration in live.get(f"{db}.{name}").migrations, name
        after = plan(project, metastore)
        assert after.is_empty, [s.summary for s in after.steps]
        assert not after.blocked
        # What each table's readers see: renamed columns keep their values, a dropped one is gone.
        for name in named - {"hp"}:
            expected[name] = [r[:len(COLUMNS[stage][name])] for r in expected[name]]  # only the last column drops
            assert _rows(spark, metastore, db, name, COLUMNS[stage][name]) == sorted(expected[name], key=repr), name
        # Renamed in place, the Parquet files of hp hold a: a1 reads NULL in them, before the conversion and after.
        hidden = sorted(((i, None, c) for i, _, c in ROWS), key=repr)
        assert _rows(spark, metastore, db, "hp", COLUMNS[stage]["hp"]) == hidden
    for name in ("conv", "hp"):
        converted = metastore.read((db,)).get(f"{db}.{name}")
        assert isinstance(converted, Table) and converted.format == "iceberg", name
