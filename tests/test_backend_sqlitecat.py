"""The conformance suite (``schemaflow.testing``) run on a backend written outside the package: ``sqlitecat``
(tests/outside/sqlitecat), installed as a package is, through a ``*.dist-info`` with the ``schemaflow.backends``
entry point on ``sys.path``, never imported by this module. No JVM: it runs in the fast tier."""
from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from schemaflow.catalog.live import Live
from schemaflow.cli import main
from schemaflow.model import Column, from_data, to_data
from schemaflow.project import load_project
from schemaflow.testing import BackendSuite, Harness

OUTSIDE = Path(__file__).parent / "outside" / "sqlitecat"


@pytest.fixture(scope="module", autouse=True)
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """sqlitecat installed as a package would be: its module on the path, its entry point in a dist-info."""
    site = tmp_path_factory.mktemp("site")
    info = site / "sqlitecat-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sqlitecat\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[schemaflow.backends]\nsqlitecat = sqlitecat\n")
    sys.path[:0] = [str(site), str(OUTSIDE)]
    yield
    for entry in (str(site), str(OUTSIDE)):
        sys.path.remove(entry)


class SqliteHarness(Harness):
    name = "sqlitecat"

    def careless(self, root: Path) -> dict[str, Any] | None:
        return {"type": self.name, "options": {"careless": True}}

    def change_outside(self, root: Path, key: str, column: Column) -> None:
        with sqlite3.connect(root / ".schemaflow" / "sqlitecat.db") as db:
            (data,) = db.execute("SELECT data FROM objects WHERE key = ?", (key,)).fetchone()
            table = from_data(json.loads(data))
            db.execute("UPDATE objects SET data = ?, revision = revision + 1 WHERE key = ?",
                       (json.dumps(to_data(replace(table, columns=(*table.columns, column)))), key))  # type: ignore[arg-type]


class TestSqlitecatSuite(BackendSuite):
    harness = SqliteHarness()


def test_the_backend_comes_through_its_entry_point(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemaflow.yaml").write_text("databases: [suite]\nmetastore: {type: sqlitecat}\n")
    backend = Live(load_project(tmp_path, env={})).backend
    assert type(backend).__module__ == "sqlitecat"
    assert sys.modules["sqlitecat"].__file__ == str(OUTSIDE / "sqlitecat.py")


def test_its_plans_are_worded_as_it_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "schemas" / "suite").mkdir(parents=True)
    (tmp_path / "schemaflow.yaml").write_text("databases: [suite]\nmetastore: {type: sqlitecat}\n")
    (tmp_path / "schemas" / "suite" / "orders.yaml").write_text(
        "table: suite.orders\ncomment: orders placed\ncolumns:\n  - {name: id, type: bigint}\n")
    assert main(["--project", str(tmp_path), "plan"]) == 2
    assert capsys.readouterr().out.endswith(
        "+ 2. create table suite.orders (1 column, parquet)\n"
        "       -- sqlitecat: create table suite.orders (INSERT of its row, unless the name is taken)\n"
        "       --   column id bigint\n       --   format parquet\n       --   comment 'orders placed'\n"
        "       --   no location declared\n\nPlan: 2 to create, 0 to change, 0 to drop.\n")
