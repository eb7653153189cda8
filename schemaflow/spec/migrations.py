"""Migration files: the ordered column changes a diff cannot infer, and their agreement with schemas/.

A migration is ``migrations/NNNN_<slug>.yaml``: a description and a list of changes (rename, drop
and reorder columns, or choose how partitions follow). Files run in the order of their numbers, and
two files with one number are an error (two branches that each added one: renumber one of them).

A migration history is permanent: a migration stays valid after what it did was changed again.
``schemas/`` shows the final state, so each table's migrations are checked against it, walking back
from the declared columns. Between migrations, schemas/ may add columns (at the end, or where a
later reorder puts them) without a migration, so a walk back cannot tell which columns existed
before a change, only which must exist after it: a rename must end in a column the table has then,
and a reorder must name only columns it has then, in an order that agrees with schemas/ when no
later reorder moved them. A column dropped or renamed away and still declared was added back
afterwards (so, by a rename's name, after the renamed column). A table that schemas/ no longer
declares was dropped: its migrations stay as history. What the files cannot tell (a name the table
never had) is found by the plan, against the live table.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any
from collections.abc import Mapping, Sequence

from schemaflow.errors import Problem
from schemaflow.model import (AcceptLoss, DropColumn, Migration, MigrationChange, Partitions, PartitionsMode, RenameColumn,
                              ReorderColumns,
                              Source, Table, View)
from schemaflow.spec.layout import MIGRATIONS_DIR
from schemaflow.spec.schema import check_shape
from schemaflow.spec.yamlpos import Document

FILE_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.ya?ml$")
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
    edited = sorted(n for n in now.keys() & listed.keys() if now[n] != listed[n])
    new, gone = sorted(now.keys() - listed.keys()), sorted(listed.keys() - now.keys())
    reasons = ([f"{', '.join(edited)} changed since it was written"] if edited else []) \
        + ([f"{', '.join(new)} {'is' if len(new) == 1 else 'are'} new: not in it yet"] if new else []) \
        + ([f"{', '.join(gone)} {'is' if len(gone) == 1 else 'are'} in it but not in migrations/"] if gone else [])
    return [Problem(where, f"does not match migrations/ ({'; '.join(reasons) or 'its first line changed since it was written'}"
                           "): review the change, then run schemaflow hash-migrations")]


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
    if kind == "accept_loss":
        return AcceptLoss(table, args["column"].lower(), source)
    return PartitionsMode(table, Partitions(args["mode"]), source)


def order_problems(migrations: Sequence[Migration]) -> list[Problem]:
    """Two migrations with one number cannot be ordered."""
    by_number: dict[str, list[Migration]] = {}
    for migration in migrations:
        by_number.setdefault(migration.id[:4], []).append(migration)
    return [Problem(_placed(m), f"migration number {number} is used by {len(same)} files "
                              f"({', '.join(sorted(o.id for o in same))}): renumber this one after the others")
            for number, same in sorted(by_number.items()) if len(same) > 1 for m in same]


def _placed(migration: Migration) -> Source:
    # A migration read from a file knows its place (doc.at()).
    assert migration.source is not None, f"migration {migration.id} has no source"
    return migration.source


def agreement_problems(migrations: Sequence[Migration], objects: Mapping[str, Table | View],
                       sources: Mapping[str, Table]) -> list[Problem]:
    """Every change that cannot be part of its table's history, walking back from the declared columns.

    A table that schemas/ no longer declares was dropped since: its migrations stay, as history, and
    are only checked on their own. A change to a source (a table schemaflow does not manage) or to a
    view (whose columns its SQL makes) is an error: nothing would ever apply it.
    """
    problems: list[Problem] = []
    sound: list[MigrationChange] = []
    for change in (change for migration in migrations for change in migration.changes):
        own = _source_problems(change, sources) or _view_problems(change, objects) or _own_problems(change)
        problems += own
        if not own:
            sound.append(change)
    for key in sorted({c.table for c in sound}):
        table = objects.get(key)
        if isinstance(table, Table):
            problems += _walk_back(table, [c for c in sound if c.table == key])
    return problems


def _source_problems(change: MigrationChange, sources: Mapping[str, Table]) -> list[Problem]:
    """A migration changes only tables that schemaflow manages, never a source."""
    source = sources.get(change.table)
    if source is None:
        return []
    where = f" in {source.source.path}" if source.source else ""
    return [_problem(change, f"{change.table} is declared as a source{where}, which schemaflow does not manage: "
                             "migrations change only managed tables; remove this change, or declare the table "
                             "with 'table:' to manage it")]


def _view_problems(change: MigrationChange, objects: Mapping[str, Table | View]) -> list[Problem]:
    """A change that the view it names contradicts: the view still has what the change takes away.

    A view's columns are what its SQL selects: no migration changes them. A change naming a view is
    history (the key was a table before) unless the view still selects the column it drops or renames,
    or selects exactly the reordered columns in another order: then it was written for the view, and
    nothing would ever apply it.
    """
    view = objects.get(change.table)
    if not isinstance(view, View):
        return []
    names = [c.name for c in view.columns]
    match change:
        case DropColumn(column=column) if column in names:
            wrote = f"drops {column}, but {change.table} is a view that selects it"
            instead = f"remove {column} from the view's sql:"
        case RenameColumn(old=old, new=new) if old in names:
            wrote = f"renames {old} to {new}, but {change.table} is a view that selects {old}"
            instead = f"name it in the view's sql: (... AS {new})"
        case ReorderColumns(order=order) if sorted(order) == sorted(names) and list(order) != names:
            wrote = f"reorders {change.table}, a view that selects ({', '.join(names)})"
            instead = "select them in that order in the view's sql:"
        case _:
            return []
    where = f" ({view.source.path})" if view.source else ""
    return [_problem(change, f"{wrote}{where}: a view's columns are what its SQL selects, so no migration "
                             f"changes them; {instead}, and remove this change")]


def _own_problems(change: MigrationChange) -> list[Problem]:
    """What is wrong with a change whatever the table's columns."""
    if isinstance(change, RenameColumn) and change.old == change.new:
        return [_problem(change, f"renames {change.old} to itself: the metastore keeps column names in lower case, "
                                 "so a rename that changes only the case changes nothing: remove it")]
    if isinstance(change, ReorderColumns) and len(set(change.order)) != len(change.order):
        twice = next(n for n in change.order if change.order.count(n) > 1)
        return [_problem(change, f"reorders {change.table} to ({', '.join(change.order)}), which names {twice} "
                                 "more than once: name each column once")]
    return []


def _walk_back(table: Table, changes: Sequence[MigrationChange]) -> list[Problem]:
    """Undo ``changes`` from the declared columns, the last first; each must fit the columns after it.

    ``ordered`` holds the columns whose order is known (as schemas/ declares it, through later renames),
    ``loose`` those whose place is not: a column a later change dropped, or every column before a
    reorder. Both may hold a column added after the point reached: schemas/ may add one at any time,
    so a column present after a change may be missing before it.
    """
    ordered = [c.name for c in table.columns]
    keys = [c.name for c in table.partition_columns]  # a loss accepted in one: its '' (sql.rewrite)
    loose: set[str] = set()
    problems = []
    for change in reversed(changes):
        present = ordered + sorted(loose)
        problem = None
        if isinstance(change, RenameColumn):
            problem = _rename_problem(table.key, change, ordered, present)
            if not problem:
                # A column named ``old`` after the rename was added back since: it was not there before.
                _discard(ordered, loose, change.old)
                if change.new in loose:
                    loose.remove(change.new)
                    loose.add(change.old)
                else:
                    ordered[ordered.index(change.new)] = change.old
        elif isinstance(change, DropColumn):
            # A column still declared was added back after the drop; where it was before is not known.
            _discard(ordered, loose, change.column)
            loose.add(change.column)
        elif isinstance(change, ReorderColumns):
            problem = _reorder_problem(table.key, change.order, ordered, present)
            ordered, loose = [], set(present if problem else change.order)
        elif isinstance(change, AcceptLoss) and change.column not in present + keys:
            problem = (f"accepts values of {change.column} its conversion makes NULL, but {table.key} then has no "
                       f"column {change.column} (its columns then: {', '.join(present + keys)}): name the column as "
                       "the table has it after the migration's renames")
        if problem:
            problems.append(_problem(change, problem))
    return problems


def _problem(change: MigrationChange, message: str) -> Problem:
    # A change read from a file knows its place; one made in code is placed at migrations/.
    return Problem(change.source or Source(MIGRATIONS_DIR), message)


def _rename_problem(key: str, change: RenameColumn, ordered: list[str], present: list[str]) -> str | None:
    """Why ``change`` cannot have left table ``key`` with the columns ``present``, if it cannot."""
    old, new = change.old, change.new
    if new not in present:
        return (f"renames {old} to {new}, but {key} then has no column {new} (its columns then: "
                f"{', '.join(present)}): fix the migration, or declare {new} in the table's file")
    if new in ordered and old in ordered[:ordered.index(new)]:
        return (f"renames {old} to {new}, but schemas/ still declares {old} before {new} in {key}: a column added "
                f"back under the name {old} would come after {new}; remove {old} from the table's file, or declare "
                f"it after {new}")
    return None


def _discard(ordered: list[str], loose: set[str], name: str) -> None:
    if name in ordered:
        ordered.remove(name)
    loose.discard(name)


def _reorder_problem(key: str, order: Sequence[str], ordered: list[str], present: list[str]) -> str | None:
    """Why ``order`` cannot be the columns of table ``key`` right after the reorder, if it cannot.

    Columns added later come after those the reorder places, unless a later reorder moves them.
    """
    named = f"reorders {key} to ({', '.join(order)})"
    unknown = [n for n in order if n not in present]
    if unknown:
        return (f"{named}, but {key} then has no column {unknown[0]} (its columns then: {', '.join(present)}): "
                "name only columns the table has")
    placed = [n for n in ordered if n in order]
    if placed != [n for n in order if n in placed]:
        return (f"{named}, which disagrees with the order schemas/ gives these columns ({', '.join(placed)}): "
                "make the two agree, or reorder again in a later migration")
    left_out = [n for n in ordered[:ordered.index(placed[-1])] if n not in order] if placed else []
    if left_out:
        after = next(n for n in ordered[ordered.index(left_out[0]):] if n in order)
        return (f"{named}, which leaves out {left_out[0]}: schemas/ declares it before {after}, so it is not a column "
                f"added after the reorder; a reorder names every column the table has: add {left_out[0]} to it")
    return None
