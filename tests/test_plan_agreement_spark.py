"""``plan --base`` and ``plan`` agree: the plan a reviewer reads is the plan apply makes.

For every kind of change, a git repository holds a base commit and a head commit of one project.
The base is applied to the real metastore (and, a second time, left as an import finds a warehouse:
nothing stamped); then the plan between the two commits (``plan --base``, the pull-request comment)
and the plan of the head against the metastore (what ``apply --reviewed`` makes after the merge)
must make the same changes, as ``apply --reviewed`` compares them.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from schemaflow.plan.review_check import differences
from schemaflow.project import load_project
from schemaflow.catalog.live import Live
from schemaflow.workflow import hash_migrations, make_plan, review_refs
from tests.gitrepos import commit, init_repo
from tests.projects import plan_and_apply

pytestmark = pytest.mark.spark

TABLE = textwrap.dedent("""
    table: $db.t
    comment: Orders
    properties: {owner: sales, tier: gold}
    columns:
      - {name: id, type: int, comment: The id}
      - {name: amount, type: int}
      - {name: note, type: string}
    """)
PARTITIONED = textwrap.dedent("""
    table: $db.p
    columns:
      - {name: id, type: int}
    partitioned_by:
      - {name: ds, type: string}
    """)
DELIMITED = textwrap.dedent("""
    table: $db.d
    format: textfile
    row_format: {fields_terminated_by: '|'}
    columns:
      - {name: id, type: int}
    """)
SOURCE = textwrap.dedent("""
    table: $db.s
    using: csv
    options: {sep: '|'}
    buckets: {clustered_by: [id], count: 4}
    columns:
      - {name: id, type: int}
    """)
VIEW = textwrap.dedent("""
    view: $db.v
    comment: Big orders
    sql: SELECT id, amount FROM t WHERE amount > 10
    """)
BASE = {"t": TABLE, "p": PARTITIONED, "d": DELIMITED, "s": SOURCE, "v": VIEW}


def _migration(change: str) -> dict[str, str]:
    return {"migrations/0001_change.yaml": f"description: the change\nchanges:\n  - {change}\n"}


# Each kind of change: the files of the head commit that differ from the base (None: removed).
CHANGES: dict[str, dict[str, str | None]] = {
    "append a column": {"t": TABLE + "  - {name: extra, type: bigint}\n"},
    "append a column to a partitioned table": {"p": PARTITIONED.replace("  - {name: id, type: int}\n",
                                                                        "  - {name: id, type: int}\n  - {name: x, type: int}\n")},
    "change a column comment": {"t": TABLE.replace("The id", "The order id")},
    "remove a column comment": {"t": TABLE.replace(", comment: The id", "")},
    "change the table comment": {"t": TABLE.replace("comment: Orders", "comment: All orders")},
    "remove the table comment": {"t": TABLE.replace("comment: Orders\n", "")},
    "change a property": {"t": TABLE.replace("tier: gold", "tier: silver")},
    "remove a property": {"t": TABLE.replace(", tier: gold", "")},
    "add a property": {"t": TABLE.replace("tier: gold", "tier: gold, team: data")},
    "widen a type": {"t": TABLE.replace("{name: amount, type: int}", "{name: amount, type: bigint}")},
    "change a delimiter": {"d": DELIMITED.replace("'|'", "','")},
    "change a data-source option": {"s": SOURCE.replace("{sep: '|'}", "{sep: ',', header: 'true'}")},
    "change a bucket count": {"s": SOURCE.replace("count: 4", "count: 8")},
    "change a view's SQL": {"v": VIEW.replace("> 10", "> 20")},
    "change a view's comment": {"v": VIEW.replace("Big orders", "Large orders")},
    "create a table": {"n": "table: $db.n\ncolumns:\n  - {name: id, type: int}\n"},
    "create a view": {"w": "view: $db.w\nsql: SELECT id FROM t\n"},
    "drop a view": {"v": None},
    "drop a table": {"d": None},
    "rename a column": {"t": TABLE.replace("name: note", "name: remark"),
                        **_migration("rename_column: {table: $db.t, from: note, to: remark}")},
    "drop a column": {"t": TABLE.replace("  - {name: note, type: string}\n", ""),
                      **_migration("drop_column: {table: $db.t, column: note}")},
    "reorder columns": {"t": TABLE.replace("  - {name: amount, type: int}\n  - {name: note, type: string}\n",
                                           "  - {name: note, type: string}\n  - {name: amount, type: int}\n"),
                        **_migration("reorder_columns: {table: $db.t, order: [id, note, amount]}")},
    "change a setting": {"schemaflow.yaml": "databases: [$db]\ninvalidation: lenient\n"},
    # Rewrites (plan.rewrite): what neither the metastore nor Spark changes in place.
    "retype a data-source column": {"s": SOURCE.replace("{name: id, type: int}", "{name: id, type: bigint}")},
    "change partition columns": {"p": PARTITIONED.replace("partitioned_by:\n  - {name: ds, type: string}\n", "")
                                 .replace("  - {name: id, type: int}\n", "  - {name: id, type: int}\n"
                                          "  - {name: ds, type: string}\n")},
}


def _write(root: Path, db: str, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        path = root / name if "." in name else root / "schemas" / db / f"{name}.yaml"  # t: schemas/<db>/t.yaml
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("$db", db))
    if (root / "migrations").exists():
        hash_migrations(load_project(root, env={}))


def _unstamped(metastore, db: str) -> None:
    """The database as an import finds it: every object and the database without schemaflow's parameters."""
    for name in metastore.msc.getAllTables(db):
        table = metastore.msc.getTable(db, name)
        for key in [k for k in table.getParameters().keySet() if k.startswith("schemaflow.")]:
            table.getParameters().remove(key)
        metastore.msc.alter_table(db, name, table)
    database = metastore.msc.getDatabase(db)
    for key in [k for k in database.getParameters().keySet() if k.startswith("schemaflow.")]:
        database.getParameters().remove(key)
    metastore.msc.alterDatabase(db, database)


@pytest.mark.parametrize("stamped", [True, False], ids=["applied", "adopted"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_plan_between_commits_and_plan_against_the_metastore_make_the_same_changes(change, stamped, tmp_path,
                                                                                   metastore, fresh_db):
    db = fresh_db()
    repo = init_repo(tmp_path)
    _write(tmp_path, db, {"schemaflow.yaml": "databases: [$db]\n", **BASE})
    base = commit(repo, "base")
    plan_and_apply(load_project(tmp_path, env={}), metastore)
    if not stamped:  # as an import leaves it: the objects as declared, never stamped by schemaflow
        _unstamped(metastore, db)
        assert make_plan(load_project(tmp_path, env={}), Live(load_project(tmp_path, env={}), connected=metastore)
                         ).is_empty
    _write(tmp_path, db, CHANGES[change])
    head = commit(repo, change)

    project = load_project(tmp_path, env={})
    reviewed = review_refs(project, base, head, allow_destructive=True).plan
    applied = make_plan(project, Live(project, connected=metastore), allow_destructive=True)
    assert not reviewed.is_empty, f"{change}: nothing planned between the commits"
    assert differences(reviewed, applied) == [], (
        f"{change}:\nplan --base: {[s.summary for s in reviewed.steps]}\nplan: {[s.summary for s in applied.steps]}")
