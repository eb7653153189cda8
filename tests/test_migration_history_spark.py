"""Migration histories the metastore allows, applied commit by commit to a real metastore.

Each history of ``tests/migration_histories.py`` is written as a project one commit at a time; each
commit is planned against the metastore, applied, and planned again, which must find nothing to
do. The columns are read back through the metastore client after every apply. A table that sat
out the whole history (as a lagging environment's does) is also taken from the first commit
straight to the last.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.apply.executor import apply_plan
from schemaflow.plan.plan import Plan
from schemaflow.project import load_project
from schemaflow.catalog.live import Live
from schemaflow.workflow import make_plan
from tests.migration_histories import HISTORIES, Stage, columns, is_view, write_stage

pytestmark = pytest.mark.spark


def plan(root: Path, metastore) -> Plan:
    project = load_project(root, env={})
    # A history may drop a table: that is the one destructive step it asks for.
    return make_plan(project, Live(project, connected=metastore), allow_destructive=True)


def apply_commit(root: Path, metastore, stages: tuple[Stage, ...], upto: int, db: str) -> None:
    """Write, plan and apply commit ``upto``; then plan again (nothing to do) and read the metastore back."""
    write_stage(root, stages, upto, db)
    result = plan(root, metastore)
    assert not any(step.blocked for step in result.steps), [(s.summary, s.blocked) for s in result.steps]
    apply_plan(result, metastore)
    assert plan(root, metastore).is_empty, upto
    assert read_back(metastore, db) == declared(stages[upto], db), upto


def declared(stage: Stage, db: str) -> dict[str, list[str] | str]:
    """What the metastore should hold after ``stage``: each table's "name:type" columns, or "view"."""
    return {f"{db}.{name}": "view" if is_view(text) else [f"{n}:{t}" for n, t in columns(text)]
            for name, text in stage.objects.items()}


def read_back(metastore, db: str) -> dict[str, list[str] | str]:
    found: dict[str, list[str] | str] = {}
    for name in metastore.msc.getAllTables(db):
        table = metastore.msc.getTable(db, name)
        found[f"{db}.{name}"] = ("view" if table.getTableType() == "VIRTUAL_VIEW" else
                                 [f"{c.getName()}:{c.getType()}" for c in table.getSd().getCols()])
    return found


@pytest.mark.parametrize("name", sorted(HISTORIES))
def test_each_commit_of_a_history_applies_and_then_plans_nothing(name, tmp_path, metastore, fresh_db):
    db = fresh_db()
    stages = HISTORIES[name]
    for upto in range(len(stages)):
        apply_commit(tmp_path, metastore, stages, upto, db)


@pytest.mark.parametrize("name", sorted(HISTORIES))
def test_a_table_left_at_the_first_commit_of_a_history_goes_straight_to_the_last(name, tmp_path, metastore,
                                                                                  fresh_db):
    db = fresh_db()
    stages = HISTORIES[name]
    apply_commit(tmp_path, metastore, stages, 0, db)
    apply_commit(tmp_path, metastore, stages, len(stages) - 1, db)
