"""The conformance suite: one test per duty a catalog backend owes schemaflow, each run through the commands as a
user runs them (``schemaflow.cli.main``) on a project of its own (``testing.projects``).

Duties: what apply makes plans empty again, after a create and after an evolution (the read round trip and the
``${live_state}`` stamp); drift is empty after an apply and names a column another writer added; history records the
creates, changes and drops; ``import`` writes files that plan empty; a saved plan made stale by another apply is
refused; of two applies racing, the second is refused while the first holds its claims; a guarded write refuses an
object whose stamp changed under it, with nothing of the step landed; a drop is blocked until allowed. And what the
planner reads of the backend's capabilities holds: a change only a rewrite makes is blocked at plan, with nothing
applied even with ``--allow-destructive``, where the catalog renames no tables; a plan has an engine analyse views (a
check of live views, a drop through the engine) only where the catalog runs one; an object's history is kept within the
catalog's ``value_limit``. A duty the backend's capabilities exclude (views) is left out of its project, not skipped.

No pytest here: a subclass is collected by whatever runner the backend's tests use; each test makes its own
temporary project folder.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from schemaflow.catalog.backends import backend_capabilities
from schemaflow.catalog.live import Live
from schemaflow.cli import main
from schemaflow.errors import ConcurrentChange
from schemaflow.capabilities import Capabilities
from schemaflow.model import HISTORY_PREFIX, VERSION_KEY, Column, Table
from schemaflow.project import load_project
from schemaflow.testing.harness import Harness
from schemaflow.testing.projects import new_database, orders, totals, write_project


@dataclass(frozen=True)
class Ran:
    """What one command did: its exit code and what it printed."""

    code: int
    out: str
    err: str


class BackendSuite:
    """Subclass with ``harness = YourHarness()``; every ``test_*`` method is a duty."""

    harness: Harness
    database: str = ""  # the database of the project the running duty made

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A duty the harness cannot stage is left out of the subclass (not skipped): a catalog that cannot be made
        careless has no careless duty."""
        super().__init_subclass__(**kwargs)
        if getattr(cls, "harness", None) is not None and cls.harness.careless(Path()) is None:
            cls.test_check_guards_refuses_a_careless_catalog = None  # type: ignore[assignment]

    @property
    def capabilities(self) -> Capabilities:
        return backend_capabilities(self.harness.name)

    @property
    def views(self) -> bool:
        """Whether the suite's project declares a view: where the backend holds views."""
        return self.capabilities.views

    # -- the means ---------------------------------------------------------------------------------------------

    @contextmanager
    def project(self) -> Iterator[Path]:
        """A fresh project folder, declaring the suite's table (and view), in the harness's environment."""
        with tempfile.TemporaryDirectory(prefix="schemaflow-suite-") as folder, self._environment():
            root = Path(folder)
            self.database = new_database()
            self.declare(root)
            yield root

    def declare(self, root: Path, table_format: str | None = None, where: str = "", **table: object) -> None:
        """Declare the suite's table (of ``table_format``, else the harness's) as ``table`` says, and its view (of the
        rows ``where`` holds) where the backend holds views."""
        write_project(root, self.harness.metastore(root), self.database,
                      orders(self.database, table_format or self.harness.table_format, **table),  # type: ignore[arg-type]
                      totals(self.database, where) if self.views else None)

    def run(self, root: Path, *argv: str) -> Ran:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["--project", str(root), *argv])
        return Ran(code, out.getvalue(), err.getvalue())

    def ok(self, root: Path, *argv: str, code: int = 0) -> Ran:
        ran = self.run(root, *argv)
        assert ran.code == code, f"schemaflow {' '.join(argv)} exited {ran.code}, not {code}:\n{ran.out}\n{ran.err}"
        return ran

    @property
    def table(self) -> str:
        """The key of the project's table."""
        return f"{self.database}.orders"

    def live_table(self, root: Path) -> Table:
        table = Live(load_project(root)).read((self.database,)).get(self.table)
        assert isinstance(table, Table), f"{self.table} is not a table in the catalog: {table!r}"
        return table

    @contextmanager
    def _environment(self) -> Iterator[None]:
        saved = {key: os.environ.get(key) for key in self.harness.environment()}
        os.environ.update(self.harness.environment())
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    # -- the duties ----------------------------------------------------------------------------------------------

    def test_what_apply_makes_plans_empty(self) -> None:
        with self.project() as root:
            self.ok(root, "plan", code=2)
            self.ok(root, "apply", "--auto-approve")
            assert "No changes" in self.ok(root, "plan").out
            table = self.live_table(root)
            assert [c.name for c in table.columns] == ["id", "amount"] and table.comment == "orders placed"
            assert table.properties.get("team") == "sales"

    def test_an_evolution_applied_plans_empty(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            self.declare(root, coupon=True, comment="orders taken", team="finance")
            self.ok(root, "plan", code=2)
            self.ok(root, "apply", "--auto-approve")
            assert "No changes" in self.ok(root, "plan").out
            table = self.live_table(root)
            assert [(c.name, c.comment) for c in table.columns][-1] == ("coupon", "code used")
            assert (table.comment, table.properties.get("team")) == ("orders taken", "finance")

    def test_drift_is_empty_after_apply_and_names_another_writers_column(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            self.ok(root, "drift")
            self.harness.change_outside(root, self.table, Column("added_outside", "string"))
            drift = self.ok(root, "drift", code=2)
            assert "added_outside" in drift.out, drift.out

    def test_history_records_creates_changes_and_drops(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            self.declare(root, coupon=True)
            self.ok(root, "apply", "--auto-approve")
            (root / "schemas" / self.database / "orders.yaml").unlink()
            (root / "schemas" / self.database / "totals.yaml").unlink(missing_ok=True)
            self.ok(root, "apply", "--auto-approve", "--allow-destructive")
            said = self.ok(root, "history", "--format", "json").out
            assert said.count(self.table) >= 3, said

    def test_import_writes_files_that_plan_empty(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            for declared in (root / "schemas" / self.database).iterdir():
                declared.unlink()
            self.ok(root, "import", "--database", self.database)
            assert (root / "schemas" / self.database / "orders.yaml").is_file()
            assert "No changes" in self.ok(root, "plan").out

    def test_a_saved_plan_made_stale_by_another_apply_is_refused(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            self.declare(root, coupon=True)
            self.ok(root, "plan", "--out", str(root / "saved.json"), code=2)
            self.declare(root, coupon=True, team="finance")
            self.ok(root, "apply", "--auto-approve")
            self.declare(root, coupon=True)
            refused = self.ok(root, "apply", str(root / "saved.json"), "--auto-approve", code=1)
            noun = self.capabilities.noun  # the catalog named as its plans name it
            assert f"is stale: the {noun} changed since it was planned; nothing was applied" in refused.err, refused.err
            assert self.live_table(root).properties.get("team") == "finance"

    def test_of_two_applies_racing_the_second_is_refused_while_the_first_holds_its_claims(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            self.declare(root, coupon=True)
            first, second = self._race(root)
            assert (first.code, second.code) == (0, 1), (first, second)
            assert "No changes" in self.ok(root, "plan").out

    def test_of_two_applies_racing_to_create_one_lands(self) -> None:
        with self.project() as root:
            first, second = self._race(root)  # nothing to claim yet: the name taken refuses the other's create
            assert sorted((first.code, second.code)) == [0, 1], (first, second)
            assert "concurrently" in first.err + second.err
            assert "No changes" in self.ok(root, "plan").out

    def test_a_guarded_write_refuses_an_object_stamped_since(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            self.declare(root, coupon=True)

            def at(point: str) -> None:
                if point == "claimed":  # another run takes the table over, unguarded, as an operator's --take-over
                    self._stamp(root, self.table, "taken-over-by-another-run")

            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = main(["--project", str(root), "apply", "--auto-approve"], pause=at)
            assert code == 1, out.getvalue() + err.getvalue()
            assert "concurrently" in err.getvalue(), err.getvalue()
            assert [c.name for c in self.live_table(root).columns] == ["id", "amount"]

    def test_a_drop_is_blocked_until_allowed(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            (root / "schemas" / self.database / "orders.yaml").unlink()
            (root / "schemas" / self.database / "totals.yaml").unlink(missing_ok=True)
            self.ok(root, "plan", code=1)
            self.ok(root, "apply", "--auto-approve", code=1)
            assert Live(load_project(root)).read((self.database,)).get(self.table) is not None
            self.ok(root, "apply", "--auto-approve", "--allow-destructive")
            assert Live(load_project(root)).read((self.database,)).get(self.table) is None
            assert "No changes" in self.ok(root, "plan").out

    def test_check_guards_passes_and_writes_are_refused_on_a_stale_stamp(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            writer = Live(load_project(root)).writer()
            writer.check_guards(self.table)
            stamp = self.live_table(root).version
            try:
                writer.set_parameters(self.table, {"team": "nobody"}, (), expected=f"{stamp}-not")
            except ConcurrentChange:
                pass
            else:
                raise AssertionError("a write expecting another stamp landed")
            assert self.live_table(root).properties.get("team") == "sales"

    def test_check_guards_refuses_a_careless_catalog(self) -> None:
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            careless = self.harness.careless(root)
            assert careless is not None
            write_project(root, careless, self.database, orders(self.database, self.harness.table_format, coupon=True),
                          totals(self.database) if self.views else None)
            self.ok(root, "apply", "--auto-approve", code=1)
            assert [c.name for c in self.live_table(root).columns] == ["id", "amount"]

    def test_a_change_only_a_rewrite_makes_is_blocked_at_plan_where_the_catalog_renames_no_tables(self) -> None:
        renames = self.capabilities.renames
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            before = self.live_table(root)
            if self.harness.table_format == "iceberg":  # Iceberg rewrites nothing: a type it cannot promote would take one
                self.declare(root, amount="string")
            else:  # another format: the rows move into a new table, swapped in by renaming
                self.declare(root, table_format="orc" if self.harness.table_format != "orc" else "parquet")
            plan = self.ok(root, "plan", code=1)
            if not renames and self.harness.table_format != "iceberg":
                assert f"the {self.capabilities.noun} renames no tables, so schemaflow cannot rewrite {self.table}" in (
                    plan.out), plan.out
            # Where the catalog renames, --allow-destructive would run the rewrite: without it, nothing runs.
            refused = self.ok(root, "apply", "--auto-approve", *(() if renames else ("--allow-destructive",)), code=1)
            assert "nothing was applied" in refused.err, refused.err
            after = self.live_table(root)
            assert (after.format, after.columns, after.version) == (before.format, before.columns, before.version)

    def test_a_plan_has_an_engine_analyse_views_only_where_the_catalog_runs_one(self) -> None:
        engine = self.capabilities.engine
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            self.declare(root, coupon=True, where="amount > 0")  # the view re-created, where the backend holds views
            changed = self._saved_actions(root, "changed.json")
            (root / "schemas" / self.database / "orders.yaml").unlink()
            (root / "schemas" / self.database / "totals.yaml").unlink(missing_ok=True)
            dropped = self._saved_actions(root, "dropped.json", "--allow-destructive")
            assert "No changes" in self.ok(root, "plan").out
        if self.views:
            assert "create_view" in [a["action"] for a in changed], changed
            assert "drop_view" in [a["action"] for a in dropped], dropped
        assert all(engine for a in changed + dropped if a["action"] == "check_live_views"), changed + dropped
        assert all(a["engine"] == engine for a in changed + dropped if a["action"] == "drop_view"), dropped

    def test_a_history_is_kept_within_the_catalogs_value_limit(self) -> None:
        limit, key = self.capabilities.value_limit, HISTORY_PREFIX + "orders"
        with self.project() as root:
            self.ok(root, "apply", "--auto-approve")
            live = Live(load_project(root))
            # As if applied many times before: twice as long as a Hive metastore holds (4,000 characters).
            (entry,) = json.loads(live.reader.database(self.database).properties[key])["applies"]
            applies = [entry] * (8_000 // len(json.dumps(entry)) + 1)
            long = json.dumps({"applies": applies, "earlier": 0}, separators=(",", ":"))
            live.writer().set_database_properties(self.database, {key: long})
            self.declare(root, coupon=True)
            self.ok(root, "apply", "--auto-approve")
            held = Live(load_project(root)).reader.database(self.database).properties[key]
        kept = json.loads(held)
        assert kept["applies"][-1][1] == "change", kept["applies"][-1]
        if limit is None or len(long) * 2 < limit:
            assert (kept["earlier"], len(kept["applies"])) == (0, len(applies) + 1), kept["earlier"]
        else:
            assert len(held) <= limit, len(held)

    def _saved_actions(self, root: Path, name: str, *argv: str) -> list[dict[str, object]]:
        """The actions of the plan made now (``plan --out``), once that plan is applied as saved."""
        self.ok(root, "plan", "--out", str(root / name), *argv, code=2)
        self.ok(root, "apply", str(root / name), "--auto-approve")
        steps = json.loads((root / name).read_text())["steps"]
        return [action for step in steps for action in step["actions"]]

    def _race(self, root: Path) -> tuple[Ran, Ran]:
        """An apply, and another run in full while the first holds its claims (``"claimed"``): what each did."""
        second: list[Ran] = []

        def at(point: str) -> None:
            if point == "claimed" and not second:
                second.append(self.run(root, "apply", "--auto-approve"))

        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["--project", str(root), "apply", "--auto-approve"], pause=at)
        return Ran(code, out.getvalue(), err.getvalue()), second[0]

    def _stamp(self, root: Path, key: str, version: str) -> None:
        writer = Live(load_project(root)).writer()
        writer.set_parameters(key, {VERSION_KEY: version}, (), None)
