"""A catalog backend written as docs/contributing.md says, under tests/ alone: ``jsondump`` serves a project's
live catalog from a JSON dump of a metastore (``schemaflow snapshot``'s format) in ``.schemaflow/live.json``,
read-only. What it proves: a backend is a class registered by name and chosen in schemaflow.yaml; the commands
plan and history go through it untouched; what it cannot answer is "not known" and starts nothing; apply is
refused before anything runs; and a change of backend is a reviewed settings step."""
from __future__ import annotations

import functools
import subprocess
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from schemaflow.catalog.backend import CatalogReader, CatalogWriter, LiveEntry, PlanHints
from schemaflow.catalog.backends import Opening, register_backend
from schemaflow.catalog.live import Live
from schemaflow.catalog.snapshot import Snapshot, load_snapshot, write_snapshot
from schemaflow.cli import main
from schemaflow.errors import SchemaflowError
from schemaflow.model import (MANAGED_KEYS_KEY, MIGRATION_PREFIX, VERSION_KEY, Catalog, Database, Object,
                              PartitionValues, Stored, Table, View)
from schemaflow.plan.kinds import StepKind
from schemaflow.project import Project, load_project
from schemaflow.workflow import applied_state, desired_state, review_live, review_refs

NAME = "jsondump"
DUMP = ".schemaflow/live.json"


@dataclass
class JsonDumpReader:
    """A ``CatalogReader`` over a saved snapshot."""

    saved: Snapshot
    endpoint: str

    def read(self, databases: tuple[str, ...]) -> Catalog:
        return self.saved.catalog.in_databases(databases)

    def databases(self) -> tuple[str, ...]:
        return self.saved.catalog.databases

    def database(self, name: str) -> Database:
        return self.saved.catalog.database_details.get(name) or Database(name)

    def entries(self, database: str) -> Iterable[LiveEntry]:
        """The dump's objects, with the parameters their stamps wrote (a dump keeps no others)."""
        return [LiveEntry(obj, stamp_parameters(obj))
                for obj in self.saved.catalog.in_databases((database,)).objects.values()]

    def count_partitions(self, key: str) -> int:
        return self.saved.partition_counts.get(key, 0)

    def partition_values(self, key: str) -> tuple[PartitionValues, ...]:
        return ()

    def stored(self, key: str) -> Stored:
        raise SchemaflowError(f"{self.endpoint} keeps no file sizes")

    def data_folders(self, key: str) -> tuple[str, ...]:
        raise SchemaflowError(f"{self.endpoint} keeps no folders")

    def enforces_type_rule(self) -> bool:
        return True

    def views(self, keys: Collection[str]) -> dict[str, View | None]:
        return {key: obj if isinstance(obj := self.saved.catalog.objects.get(key), View) else None for key in keys}


def stamp_parameters(obj: Object) -> dict[str, str]:
    """What an apply's stamp of ``obj`` wrote, as far as the model keeps it: its version, managed keys, migrations."""
    migrations = obj.migrations if isinstance(obj, Table) else {}
    return {**obj.properties, VERSION_KEY: obj.version or "", MANAGED_KEYS_KEY: ",".join(obj.managed_keys),
            **{MIGRATION_PREFIX + key: value for key, value in migrations.items()}}


@register_backend(NAME)
@dataclass
class JsonDumpBackend:
    """Read-only: the dump is read when first asked; nothing is ever written."""

    project: Project
    opening: Opening
    opened: list[str] = field(default_factory=list)  # what was asked of it, in order

    def where(self) -> str:
        return f"the dump {self.project.root / DUMP}"

    @functools.cached_property
    def reader(self) -> CatalogReader:
        self.opened.append("reader")
        return JsonDumpReader(load_snapshot(self.project.root / DUMP), f"jsondump:{DUMP}")

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        pass

    def read(self, databases: tuple[str, ...]) -> Catalog:
        return self.reader.read(databases)

    def writer(self) -> CatalogWriter | None:
        return None

    def stale_partitions(self, key: str, exact: bool = False) -> int | None:
        self.opened.append(f"stale_partitions {key}")
        return None

    def view_problems(self, desired: Catalog, views: Iterable[str]) -> dict[str, str] | None:
        self.opened.append(f"view_problems {', '.join(views)}")
        return None

    def hints(self) -> PlanHints | None:
        return None


ORDERS = """\
table: retail.orders
columns:
  - {name: id, type: bigint}
  - {name: amount, type: 'decimal(12,2)'}
partitioned_by: [{name: ds, type: string}]
"""
TOTALS = """\
view: retail.totals
sql: SELECT id, amount FROM retail.orders
columns: [{name: id}, {name: amount}]
"""


@pytest.fixture
def project_root(tmp_path: Path) -> Iterator[Path]:
    """A project on ``jsondump`` whose dump holds what a complete apply of its files leaves."""
    (tmp_path / "schemas" / "retail").mkdir(parents=True)
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [retail]\nmetastore: {{type: {NAME}}}\n")
    (tmp_path / "schemas" / "retail" / "orders.yaml").write_text(ORDERS)
    (tmp_path / "schemas" / "retail" / "totals.yaml").write_text(TOTALS)
    (tmp_path / ".schemaflow").mkdir()
    project = load_project(tmp_path, env={})
    write_snapshot(applied_state(desired_state(project)), tmp_path / DUMP, {"retail.orders": 12})
    yield tmp_path


def test_the_project_names_the_backend_and_every_read_goes_through_it(project_root: Path) -> None:
    project = load_project(project_root, env={})
    assert project.settings.metastore_type == NAME
    live = Live(project, direct=True)
    assert isinstance(live.backend, JsonDumpBackend)
    assert review_live(project, live).plan.is_empty
    # A change: planned against the dump, with its partition count, a view re-created and not checked.
    (project_root / "schemas" / "retail" / "orders.yaml").write_text(ORDERS.replace(
        "  - {name: amount, type: 'decimal(12,2)'}\n", "  - {name: amount, type: 'decimal(12,2)'}\n"
        "  - {name: channel, type: string}\n"))
    (project_root / "schemas" / "retail" / "totals.yaml").write_text(TOTALS.replace("id, amount", "id, amount + 1 AS amount"))
    live = Live(project, direct=True)
    plan = review_live(project, live).plan
    assert [(s.kind, s.object, s.blocked) for s in plan.steps] == [
        (StepKind.ADD_COLUMNS, "retail.orders", None), (StepKind.REPLACE_VIEW, "retail.totals", None)]
    assert plan.metastore == f"jsondump:{DUMP}"
    assert "12 partitions" in " ".join(plan.steps[0].notes + plan.steps[0].hazards + (plan.steps[0].summary,))
    assert live.backend.opened == ["reader", "view_problems retail.totals"]  # type: ignore[attr-defined]


def test_plan_and_history_run_through_it_and_apply_is_refused_before_anything_runs(
        project_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--project", str(project_root), "plan"]) == 0
    assert "No changes" in capsys.readouterr().out
    assert main(["--project", str(project_root), "history"]) == 0
    capsys.readouterr()
    (project_root / "schemas" / "retail" / "orders.yaml").write_text(ORDERS.replace("bigint", "string"))
    before = (project_root / DUMP).read_bytes()
    # bigint -> string in Parquet files breaks Spark's reads: allowed, so that the dump's own refusal is reached.
    assert main(["--project", str(project_root), "apply", "--auto-approve", "--allow-destructive"]) == 1
    said = capsys.readouterr().err
    assert f"the dump {project_root / DUMP} is read by schemaflow and not written (metastore.type {NAME}): " \
           "nothing was applied" in said
    assert (project_root / DUMP).read_bytes() == before


def test_an_unknown_backend_is_refused_with_the_names_there_are(project_root: Path) -> None:
    (project_root / "schemaflow.yaml").write_text("databases: [retail]\nmetastore: {type: unity}\n")
    with pytest.raises(SchemaflowError, match="metastore.type 'unity' names no catalog backend; the backends are "
                                              f"glue, hive, iceberg_rest, {NAME} \\(default hive\\)"):
        Live(load_project(project_root, env={}))


def test_choosing_another_backend_is_a_settings_step_with_a_hazard(project_root: Path) -> None:
    settings = project_root / "schemaflow.yaml"
    settings.write_text("databases: [retail]\nmetastore: {type: hive}\n")
    git = ["git", "-C", str(project_root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(project_root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    settings.write_text(f"databases: [retail]\nmetastore: {{type: {NAME}}}\n")
    [step] = review_refs(load_project(project_root, env={}), "main").plan.steps
    assert (step.kind, step.summary) == (StepKind.CHANGE_SETTINGS, "change metastore.type in schemaflow.yaml")
    assert step.values == (f'metastore.type: "hive" -> "{NAME}"',)
    assert step.hazards == ("changes the catalog backend apply reads and writes through (the operator's "
                            "SCHEMAFLOW_* variables, where set, still win)",)
