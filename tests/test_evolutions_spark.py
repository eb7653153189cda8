"""Random evolutions applied to the real metastore: after each apply the plan is empty, the metastore holds what the
files say, and every value followed its column.

``tests/evolutions.py`` draws histories of projects as teams change them: several tables of mixed kinds with views
over them, commits that rename, drop, reorder and retype across tables in one migration, changes that need a
rewrite. Each commit is planned against the shared metastore (rewrites and drops allowed), after the plan of the same
commit against the one before (``plan --base``, no JVM) is checked to have the same steps; applied; planned again,
which must be empty; and read back: every table and view as the files declare it, and the rows each table was given
when it was created, read through Spark as text, each value under its column's current name and type (NULL in a
column added since). Iceberg tables are planned, applied and read back from the metastore; their rows are not
written (the shared session has no Iceberg runtime).

In CI it runs ``HISTORIES`` histories of ``LENGTH`` commits in the shared session; ``SCHEMAFLOW_EVOLUTIONS`` sets how
many commits to run in all, ``SCHEMAFLOW_EVOLUTIONS_SEED`` the first history's seed. A failure names its seed and
commit.
"""
from __future__ import annotations

import os
import random

import pytest

from schemaflow.apply.executor import apply_plan
from schemaflow.model import Object, Table
from schemaflow.plan.backups import BackupDrops
from schemaflow.project import Project, load_project
from schemaflow.sql.quoting import ident, qualified
from schemaflow.workflow import desired_state, review_refs
from tests.evolutions import ROWS, State, evolve, first_state
from tests.gitrepos import commit, init_repo, put_files
from tests.projects import plan

pytestmark = pytest.mark.spark

LENGTH = 5
COMMITS = int(os.environ.get("SCHEMAFLOW_EVOLUTIONS", str(3 * LENGTH)))
SEED = int(os.environ.get("SCHEMAFLOW_EVOLUTIONS_SEED", "20261202"))
# A table rewritten a second time needs the name its first rewrite kept the backup under.
DROPS = BackupDrops(copies=True)


def steps(planned) -> list[tuple[str, str, str | None]]:  # type: ignore[no-untyped-def]
    """The steps of a plan but those on a rewrite's backup, which only the metastore holds (the live plans drop
    earlier backups, as a team that rewrites a table again does: ``--drop-backups``)."""
    return [(s.kind, s.object, s.blocked) for s in planned.steps if not s.object.endswith("_backup_")]


# What a plan may refuse of a drawn commit, by design and with the way out: the metastore's positional type rule, which
# it keeps over an Iceberg table's copy of its columns too, a retype Iceberg does not take, and (Spark 3.5, whose views
# store no schema mode) a retype that breaks a view under the default strict invalidation. The team goes back.
REFUSALS = ("the metastore compares types position by position", "Iceberg changes a column's type in place only",
            "invalidation: strict, and this change breaks")


def refused(planned) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``planned`` is blocked only by what the plan refuses by design (``REFUSALS``)."""
    return bool(planned.blocked) and all(any(r in (s.blocked or "") for r in REFUSALS) for s in planned.blocked)


def shape(declared: Object) -> tuple[object, ...]:
    """What the metastore must hold of a table or view as declared: its kind and columns, a table's with their types."""
    if isinstance(declared, Table):
        return declared.format, declared.data_source, tuple((c.name, c.type) for c in declared.columns)
    return ("view", *(c.name for c in declared.columns))


def converge(project: Project, state: State, created: tuple[str, ...], where: str, metastore, spark) -> bool:
    """Plan and apply ``project`` (declaring ``state``), then check the plan is empty, the metastore holds what the
    files declare and the rows hold their values; the tables ``created`` are given their rows. False: the plan
    refused the commit by design (``REFUSALS``), nothing applied."""
    first = plan(project, metastore, allow_destructive=True, drop_backups=DROPS)
    if refused(first):
        return False
    assert not first.blocked, f"{where}: blocked: {[s.blocked for s in first.blocked]}"
    apply_plan(first, metastore)
    again = plan(project, metastore)
    assert again.is_empty, f"{where}: not converged: {[(s.summary, s.blocked) for s in again.steps]}"
    desired, live = desired_state(project), metastore.read((state.database,))
    others = set(live.objects) ^ set(desired.objects)  # beside the declared objects, only the backups of rewrites
    assert all(key.endswith("_backup_") and key in live.objects for key in others), f"{where}: {others}"
    for key, declared in desired.objects.items():
        assert shape(live.objects[key]) == shape(declared), f"{where}: {key} reads back otherwise"
    for table in state.tables:
        key = qualified(f"{state.database}.{table.name}")
        if table.kind == "iceberg":
            continue
        if table.name in created:
            rows = ", ".join("(" + ", ".join(c.value(r) for c in table.columns) + ")" for r in ROWS)
            spark.sql(f"INSERT INTO {key} VALUES {rows}")
        read = spark.sql(f"SELECT {', '.join(f'CAST({ident(c.name)} AS STRING)' for c in table.columns)} FROM {key}")
        at = [c.name for c in table.columns].index("id")
        rows_read = sorted((tuple(row) for row in read.collect()), key=lambda row: int(row[at]))
        assert rows_read == [table.expected(r) for r in ROWS], f"{where}: rows of {table.name}"
    return True


def test_random_evolutions_converge_with_every_value_under_its_column(tmp_path, metastore, spark):
    done, seed, refusals = 0, SEED, []
    while done < COMMITS:
        database = f"evo{seed}"
        root = tmp_path / database
        repo = init_repo(root)
        rng = random.Random(seed)
        state, created = first_state(rng, database)
        try:
            put_files(root, dict(state.files()))
            commit(repo, "first")
            assert converge(load_project(root, env={}), state, created, f"seed {seed}, first commit", metastore, spark)
            for number in range(1, LENGTH + 1):
                evolution = evolve(rng, state, number)
                where = (f"SCHEMAFLOW_EVOLUTIONS_SEED={seed}, commit {number} ({evolution.describe()}; migration: "
                         f"{list(evolution.changes)})")
                edited = evolution.edited(state)
                put_files(root, edited)
                commit(repo, f"evolution {number}")
                project = load_project(root, env={})
                by_refs = review_refs(project, "HEAD~1", "HEAD", allow_destructive=True).plan
                live = plan(project, metastore, allow_destructive=True, drop_backups=DROPS)
                assert steps(by_refs) == steps(live), f"{where}: plan --base and the plan against the metastore differ"
                if converge(project, evolution.after, evolution.created, where, metastore, spark):
                    state = evolution.after
                else:  # refused as designed: the team takes the commit back
                    refusals.append(where)
                    put_files(root, {path: state.files().get(path) for path in edited})
                    commit(repo, f"evolution {number} taken back")
                done += 1
        finally:
            spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
        seed += 1
    assert len(refusals) < done / 2, refusals  # most commits are applied: the check is not vacuous
