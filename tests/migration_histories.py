"""Migration histories the metastore allows, as the commits of a project: shared by the fast and Spark tests.

A history is a list of stages, each one commit: the files of ``schemas/`` as they are then (a table
as its columns, a view as its SQL; an object the stage leaves out is not declared then) and the
migration the commit adds, if any. ``write_stage`` writes the project as it is after a stage, with
the migrations of every stage so far (stage ``i`` adds ``migrations/000i_step.yaml``) and their
``schemaflow.sum``. ``$db`` in the texts stands for the database, so the Spark tests use their own.
"""
from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping

from schemaflow.spec.migrations import MIGRATIONS_DIR, SUM_FILE, sum_text

DB = "retail"


@dataclass(frozen=True)
class Stage:
    objects: Mapping[str, str]                  # name -> "a int, b string", or a view's "SELECT ..."
    changes: tuple[str, ...] = field(default=())  # the changes of the migration this stage adds


HISTORIES: dict[str, tuple[Stage, ...]] = {
    "two_reorders_of_one_table": (
        Stage({"t": "a int, b int, c int"}),
        Stage({"t": "c int, a int, b int"}, ("reorder_columns: {table: $db.t, order: [c, a, b]}",)),
        Stage({"t": "b int, c int, a int"}, ("reorder_columns: {table: $db.t, order: [b, c, a]}",)),
    ),
    "dropped_then_added_back_with_another_type": (
        Stage({"t": "id bigint, a int, x int"}),
        Stage({"t": "id bigint, a int"}, ("drop_column: {table: $db.t, column: x}",)),
        Stage({"t": "id bigint, a int, x string"}),
        Stage({"t": "id bigint, b int, x string"}, ("rename_column: {table: $db.t, from: a, to: b}",)),
        Stage({"t": "id bigint, b int, x string"}, ("partitions: {table: $db.t, mode: restrict}",)),
    ),
    "dropped_and_added_back_in_one_commit": (
        Stage({"t": "id bigint, x int"}),
        Stage({"t": "id bigint, x string"}, ("drop_column: {table: $db.t, column: x}",)),
    ),
    "table_dropped_after_a_migration_named_it": (
        Stage({"t": "a int, b int", "u": "z int"}),
        Stage({"t": "a int, c int", "u": "z int"}, ("rename_column: {table: $db.t, from: b, to: c}",)),
        Stage({"u": "z int"}),
    ),
    "table_replaced_by_a_view": (
        Stage({"t": "a int, b int", "u": "z int"}),
        Stage({"t": "a int, c int", "u": "z int"}, ("rename_column: {table: $db.t, from: b, to: c}",)),
        Stage({"t": "SELECT z FROM $db.u", "u": "z int"}),
    ),
    "table_declared_again_after_a_drop": (
        Stage({"t": "a int, b int"}),
        Stage({"t": "a int, c int"}, ("rename_column: {table: $db.t, from: b, to: c}",)),
        Stage({"u": "z int"}),
        Stage({"t": "a int, c int, d string", "u": "z int"}),
    ),
    "renamed_there_and_back": (
        Stage({"t": "a int, x int"}),
        Stage({"t": "b int, x int"}, ("rename_column: {table: $db.t, from: a, to: b}",)),
        Stage({"t": "a int, x int"}, ("rename_column: {table: $db.t, from: b, to: a}",)),
    ),
    "renamed_then_dropped": (
        Stage({"t": "a int, x int, y int"}),
        Stage({"t": "a int, x int, z int"}, ("rename_column: {table: $db.t, from: y, to: z}",)),
        Stage({"t": "a int, x int"}, ("drop_column: {table: $db.t, column: z}",)),
    ),
    "name_a_rename_freed_added_back_then_dropped": (
        Stage({"t": "a int, b string"}),
        Stage({"t": "c int, b string"}, ("rename_column: {table: $db.t, from: a, to: c}",)),
        Stage({"t": "c int, b string, a string"}),
        Stage({"t": "c int, b string"}, ("drop_column: {table: $db.t, column: a}",)),
    ),
    "renamed_into_a_name_a_drop_freed": (
        Stage({"t": "a int, b int"}),
        Stage({"t": "b int"}, ("drop_column: {table: $db.t, column: b}", "rename_column: {table: $db.t, from: a, to: b}")),
    ),
    "reordered_then_dropped": (
        Stage({"t": "a int, b int, c int"}),
        Stage({"t": "b int, a int, c int"}, ("reorder_columns: {table: $db.t, order: [b, a, c]}",)),
        Stage({"t": "b int, c int"}, ("drop_column: {table: $db.t, column: a}",)),
    ),
    "added_then_renamed": (
        Stage({"t": "a int"}),
        Stage({"t": "a int, c string"}),
        Stage({"t": "a int, d string"}, ("rename_column: {table: $db.t, from: c, to: d}",)),
    ),
    "dropped_twice": (
        Stage({"t": "a int, x int"}),
        Stage({"t": "a int"}, ("drop_column: {table: $db.t, column: x}",)),
        Stage({"t": "a int, x string"}),
        Stage({"t": "a int"}, ("drop_column: {table: $db.t, column: x}",)),
    ),
}


def random_history(seed: int) -> tuple[Stage, ...]:
    """A history of one table (``t``, int columns) of up to five commits, as a team might write it.

    A commit either adds a column to schemas/ (a new name, or one a migration took away), or adds a
    migration of one to three changes: renames (to a new name or a freed one), drops, reorders (whose
    order may name a column the same commit adds), maybe with a column added in the same commit.
    """
    rng = random.Random(seed)
    columns = [f"c{i}" for i in range(rng.randint(1, 4))]
    fresh = (f"n{i}" for i in range(100))
    freed: list[str] = []

    def another() -> str:
        reusable = [name for name in freed if name not in columns]
        return rng.choice(reusable) if reusable and rng.random() < 0.5 else next(fresh)

    def change() -> str:
        draw = rng.random()
        if draw < 0.4 or len(columns) == 1:
            old, new = rng.choice(columns), another()
            columns[columns.index(old)] = new
            freed.append(old)
            return f"rename_column: {{table: $db.t, from: {old}, to: {new}}}"
        if draw < 0.7:
            gone = rng.choice(columns)
            columns.remove(gone)
            freed.append(gone)
            return f"drop_column: {{table: $db.t, column: {gone}}}"
        if rng.random() < 0.3:
            columns.append(another())
        rng.shuffle(columns)
        return f"reorder_columns: {{table: $db.t, order: [{', '.join(columns)}]}}"

    stages = [Stage({"t": ", ".join(f"{c} int" for c in columns)})]
    for _ in range(rng.randint(1, 5)):
        changes: tuple[str, ...] = ()
        if rng.random() < 0.25:
            columns.append(another())
        else:
            changes = tuple(change() for _ in range(rng.randint(1, 3)))
            if rng.random() < 0.3:
                columns.append(next(fresh))
        stages.append(Stage({"t": ", ".join(f"{c} int" for c in columns)}, changes))
    return tuple(stages)


def write_stage(root: Path, stages: tuple[Stage, ...], upto: int, db: str = DB) -> Path:
    """The project ``root`` as it is after ``stages[upto]`` (what an earlier stage wrote is replaced)."""
    for folder in ("schemas", MIGRATIONS_DIR):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "schemas" / db).mkdir(parents=True)
    (root / MIGRATIONS_DIR).mkdir()
    for name, text in stages[upto].objects.items():
        (root / "schemas" / db / f"{name}.yaml").write_text(_object_file(f"{db}.{name}", text.replace("$db", db)))
    contents: dict[str, bytes] = {}
    for number, stage in enumerate(stages[:upto + 1]):
        if stage.changes:
            lines = ["description: A step of the history", "changes:",
                     *(f"  - {change.replace('$db', db)}" for change in stage.changes)]
            contents[f"{number:04d}_step.yaml"] = "".join(line + "\n" for line in lines).encode()
    for name, content in contents.items():
        (root / MIGRATIONS_DIR / name).write_bytes(content)
    if contents:
        (root / MIGRATIONS_DIR / SUM_FILE).write_text(sum_text(contents))
    return root


def columns(text: str) -> list[tuple[str, str]]:
    """The (name, type) of each column of a table as a stage writes it ("a int, b string")."""
    return [(name, type_) for name, type_ in (column.split() for column in text.split(","))]


def is_view(text: str) -> bool:
    return text.startswith("SELECT")


def _object_file(key: str, text: str) -> str:
    if is_view(text):
        return f"view: {key}\nsql: {text}\n"
    return f"table: {key}\ncolumns:\n" + "".join(f"  - {{name: {n}, type: {t}}}\n" for n, t in columns(text))
