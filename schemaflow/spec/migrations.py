"""Migration files: the ordered column changes a diff cannot infer, and their agreement with schemas/.

A migration is ``migrations/NNNN_<slug>.yaml``: a description and a list of changes (rename, drop
and reorder columns, or choose how partitions follow). Files run in the order of their numbers, and
two files with one number are an error (two branches that each added one: renumber one of them).

``schemas/`` always shows the final state, so each table's migrations are checked against it,
walking back from the declared columns: a rename must end in a declared column, a dropped column
must be gone from the declaration, and a reorder must agree with the declared order. A migration
that disagrees with the schema is an error at the change that disagrees.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, Mapping, Sequence

from schemaflow.errors import Problem
from schemaflow.model import (DropColumn, Migration, MigrationChange, PartitionsMode, RenameColumn, ReorderColumns,
                              Source, Table, View)
from schemaflow.spec.schema import check_shape
from schemaflow.spec.yamlpos import Document

FILE_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.ya?ml$")
MIGRATIONS_DIR = "migrations"
SUM_FILE = "schemaflow.sum"


def checksum(content: bytes) -> str:
    """The digest recorded with an applied migration, so an edit after applying it is noticed."""
    return hashlib.sha256(content).hexdigest()[:16]


def sum_text(contents: Mapping[str, bytes]) -> str:
    """The checksum file for migration files ``contents`` (name -> bytes).

    One line per file, then a first line over all of them: two branches that each add a migration
    both change that line, so git makes their merge a conflict and someone orders them on purpose.
    """
    lines = [f"{name} {checksum(content)}" for name, content in sorted(contents.items())]
    total = checksum("\n".join(lines).encode())
    return "\n".join([f"total {total}", *lines]) + "\n"


def sum_problems(contents: Mapping[str, bytes], recorded: bytes | None) -> list[Problem]:
    """Whether ``migrations/schemaflow.sum`` is there and matches the migration files."""
    where = Source(f"{MIGRATIONS_DIR}/{SUM_FILE}")
    if not contents and recorded is None:
        return []
    if recorded is None:
        return [Problem(where, "missing: migrations are checked against it; review them, then run "
                               "schemaflow hash-migrations to write it")]
    if recorded.decode(errors="replace") == sum_text(contents):
        return []
    listed = dict(line.split(" ", 1) for line in recorded.decode(errors="replace").splitlines()[1:] if " " in line)
    now = {name: checksum(content) for name, content in contents.items()}
    changed = sorted(n for n in now.keys() | listed.keys() if now.get(n) != listed.get(n))
    return [Problem(where, f"does not match migrations/ ({', '.join(changed) or 'its first line'} changed since it "
                           "was written): review the change, then run schemaflow hash-migrations")]


def read_migration(doc: Document, content: bytes) -> tuple[Migration | None, list[Problem]]:
    """The migration one file declares, or the problems that keep it from being read."""
    name = doc.path.rsplit("/", 1)[-1]
    if not FILE_NAME.match(name):
        return None, [Problem(doc.at(), f"a migration file is named NNNN_<slug>.yaml (four digits, then lower-case "
                                        f"letters, digits and underscores), not {name!r}: rename it")]
    problems = check_shape(doc, doc.data, "migration")
    if problems:
        return None, problems
    changes = tuple(_change(doc, index, item) for index, item in enumerate(doc.data["changes"]))
    migration_id = name.rsplit(".", 1)[0]
    return Migration(migration_id, doc.data["description"], changes, checksum(content), doc.at()), []


def _change(doc: Document, index: int, item: Mapping[str, Any]) -> MigrationChange:
    (kind, args), = item.items()
    table = args["table"].lower()
    source = doc.at("changes", index, kind)
    if kind == "rename_column":
        return RenameColumn(table, args["from"].lower(), args["to"].lower(), source)
    if kind == "drop_column":
        return DropColumn(table, args["column"].lower(), source)
    if kind == "reorder_columns":
        return ReorderColumns(table, tuple(n.lower() for n in args["order"]), source)
    return PartitionsMode(table, args["mode"], source)


def order_problems(migrations: Sequence[Migration]) -> list[Problem]:
    """Two migrations with one number cannot be ordered."""
    by_number: dict[str, list[Migration]] = {}
    for migration in migrations:
        by_number.setdefault(migration.id[:4], []).append(migration)
    return [Problem(m.source, f"migration number {number} is used by {len(same)} files "
                              f"({', '.join(sorted(o.id for o in same))}): renumber this one after the others")
            for number, same in sorted(by_number.items()) if len(same) > 1 for m in same]


def agreement_problems(migrations: Sequence[Migration], objects: Mapping[str, Table | View]) -> list[Problem]:
    """Every change that disagrees with the declared tables (walking back from their final columns)."""
    problems: list[Problem] = []
    changes = [change for migration in migrations for change in migration.changes]
    for change in changes:
        declared = objects.get(change.table)
        if not isinstance(declared, Table):
            what = "a view" if isinstance(declared, View) else "not declared in schemas/"
            problems.append(Problem(change.source, f"{change.table} is {what}: migrations change tables' columns"))
    for key in sorted({c.table for c in changes}):
        table = objects.get(key)
        if isinstance(table, Table):
            problems += _walk_back(table, [c for c in changes if c.table == key])
    return problems


def _walk_back(table: Table, changes: Sequence[MigrationChange]) -> list[Problem]:
    """Undo ``changes`` from the declared columns, the last first; each must fit the state after it."""
    names = [c.name for c in table.columns]
    problems = []
    for change in reversed(changes):
        after = ", ".join(names)
        if isinstance(change, RenameColumn):
            if change.new not in names:
                problems.append(Problem(change.source, f"renames {change.old} to {change.new}, but {table.key} then "
                                                       f"has no column {change.new} (schemas/ ends with: {after})"))
            elif change.old in names:
                problems.append(Problem(change.source, f"renames {change.old} to {change.new}, but {table.key} "
                                                       f"still has a column {change.old} afterwards ({after})"))
            else:
                names[names.index(change.new)] = change.old
        elif isinstance(change, DropColumn):
            if change.column in names:
                problems.append(Problem(change.source, f"drops {change.column}, but schemas/ still declares it in "
                                                       f"{table.key}: remove it from the table's file"))
            else:
                names.append(change.column)
        elif isinstance(change, ReorderColumns):
            unknown = [n for n in change.order if n not in names]
            placed = [n for n in names if n in change.order]
            if unknown or len(set(change.order)) != len(change.order) or placed != list(change.order):
                problems.append(Problem(change.source, f"reorders {table.key} to ({', '.join(change.order)}), which "
                                                       f"disagrees with the columns it then has ({after})"))
    return problems
