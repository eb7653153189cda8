"""The Hive writer's Spark SQL writes (ADD COLUMNS, COMMENT, ALTER COLUMN ... COMMENT, DROP TABLE, DROP VIEW) carry no
guard of the metastore's: each reads the object's ``schemaflow.version`` right before it runs and refuses, with nothing
written, an object that no longer holds the run's claim. Another writer (a notebook's Spark SQL on the same metastore)
changes the object after the apply claimed it and before the write; and each such write costs one read of its object.
"""
from __future__ import annotations

import contextlib
import io
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.cli import main
from schemaflow.model import Table, View
from schemaflow.sql.quoting import qualified
from tests.inprocess import Ran, schemaflow

# Run with the newest pyspark only in CI (.ci/spark_versions.py without --ci runs it on every release).
pytestmark = [pytest.mark.spark, pytest.mark.one_release]

ORDERS = ("table: {db}.orders\nformat: parquet\ncomment: orders placed\n"
          "columns:\n  - {{name: id, type: bigint, comment: the id}}\n  - {{name: amount, type: 'decimal(12,2)'}}\n")
TOTALS = "view: {db}.totals\nsql: SELECT id, amount FROM {db}.orders\n"
NOTEBOOK = "a notebook"


def project(root: Path, db: str, orders: str | None = ORDERS, totals: str | None = TOTALS) -> str:
    """A project at ``root`` on the session's metastore declaring ``orders`` and ``totals`` (None: not declared)."""
    folder = root / "schemas" / db
    folder.mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    for name, text in (("orders", orders), ("totals", totals)):
        if text is None:
            (folder / f"{name}.yaml").unlink(missing_ok=True)
        else:
            (folder / f"{name}.yaml").write_text(text.format(db=db))
    return str(root)


def apply_paused(root: str, at: Callable[[str], None], *flags: str) -> Ran:
    """``schemaflow apply --auto-approve`` in this process, ``at`` called at each of its pause points."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--project", root, "apply", "--auto-approve", *flags], pause=at)
    return Ran(code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("change, kind", [
    ("add a column", "table"), ("comment the table", "table"), ("comment a column", "table"),
    ("drop the table", "table"), ("drop the view", "view")])
def test_a_spark_sql_write_refuses_an_object_another_writer_stamped_after_the_claim_and_writes_nothing(
        tmp_path: Path, spark: Any, metastore: Metastore, fresh_db: Callable[[], str], change: str, kind: str) -> None:
    db = fresh_db()
    root = project(tmp_path, db)
    assert schemaflow("--project", root, "apply", "--auto-approve").code == 0
    declared = {
        "add a column": {"orders": ORDERS + "  - {{name: coupon, type: string}}\n"},
        "comment the table": {"orders": ORDERS.replace("orders placed", "orders taken")},
        "comment a column": {"orders": ORDERS.replace("the id", "the order's id")},
        "drop the table": {"orders": None, "totals": None},
        "drop the view": {"totals": None},
    }[change]
    project(tmp_path, db, **declared)  # type: ignore[arg-type]
    key = f"{db}.orders" if kind == "table" else f"{db}.totals"
    before = metastore.read((db,)).get(key)
    assert isinstance(before, Table | View)

    def notebook(point: str) -> None:  # after the claims, before the first write: another writer's own stamp
        if point == "claimed":
            spark.sql(f"ALTER {kind.upper()} {key} SET TBLPROPERTIES ('schemaflow.version' = '{NOTEBOOK}')")

    refused = apply_paused(root, notebook, "--allow-destructive")
    assert refused.code == 1, refused.said
    assert f"{key} was modified concurrently: its schemaflow.version is '{NOTEBOOK}'" in refused.err, refused.err
    after = metastore.read((db,)).get(key)  # as the other writer left it: nothing of the step landed
    assert isinstance(after, Table | View) and after.version == NOTEBOOK
    assert (after.columns, after.comment) == (before.columns, before.comment)


@pytest.mark.parametrize("change, statement", [
    ("add a column", "ALTER TABLE {key} ADD COLUMNS ("), ("comment the table", "COMMENT ON TABLE {key} IS"),
    ("comment three columns", "ALTER TABLE {key} ALTER COLUMN `c` COMMENT")])
def test_each_spark_sql_write_reads_its_object_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    fresh_db: Callable[[], str], change: str, statement: str) -> None:
    """What the check costs, counted (``getTable`` calls of the object, by action): the Spark SQL write reads the
    claim once, three statements as one; the step's stamp reads the object once, as it did before."""
    db = fresh_db()
    key = f"{db}.orders"
    # Spark SQL comments the columns of a data-source table (a Hive-format table's go in one metastore alter_table).
    three = ("table: {db}.orders\n" + ("using" if "columns" in change else "format") + ": parquet\ncomment: orders\ncolumns:\n  - {{name: a, type: int, comment: a}}\n"
             "  - {{name: b, type: int, comment: b}}\n  - {{name: c, type: int, comment: c}}\n")
    root = project(tmp_path, db, three, None)
    assert schemaflow("--project", root, "apply", "--auto-approve").code == 0
    project(tmp_path, db, {"add a column": three + "  - {{name: d, type: int}}\n",
                           "comment the table": three.replace("comment: orders", "comment: all orders"),
                           "comment three columns": three.replace("comment: ", "comment: new ").replace(
                               "new orders", "orders")}[change], None)
    reads: Counter[str] = Counter()
    by_action: dict[str, int] = {}

    def at(point: str) -> None:
        if point == "claimed":
            reads.clear()
        elif point != "planned":
            by_action[point] = reads[key] - sum(by_action.values())
    with counting_reads(monkeypatch, reads):
        applied = apply_paused(root, at)
    assert applied.code == 0, applied.said
    assert statement.format(key=qualified(key)) in applied.out, applied.out  # one step, through Spark SQL
    assert by_action == {"1.1": 1, "1.2": 1}, applied.out


@contextlib.contextmanager
def counting_reads(monkeypatch: pytest.MonkeyPatch, reads: Counter[str]) -> Iterator[None]:
    """Counts into ``reads``, by ``db.name``, the ``getTable`` calls of every ``Metastore`` connected in the block."""
    connect = Metastore.connect.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Metastore], *args: Any, **kwargs: Any) -> Metastore:
        opened: Metastore = connect(cls, *args, **kwargs)
        opened.msc = Counting(opened.msc, reads)
        return opened
    with monkeypatch.context() as patched:
        patched.setattr(Metastore, "connect", classmethod(counted))
        yield


class Counting:
    """A metastore client whose ``getTable`` calls are counted; every other call goes through as it is."""

    def __init__(self, msc: Any, reads: Counter[str]) -> None:
        self._msc, self._reads = msc, reads

    def getTable(self, database: str, name: str) -> Any:  # noqa: N802 -- the client's own name
        self._reads[f"{database}.{name}"] += 1
        return self._msc.getTable(database, name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._msc, name)
