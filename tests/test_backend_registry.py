"""The registry of catalog backends (``catalog.backends``): built-ins imported only when a project names them, a backend
installed through a real entry point whose module fails to import said in one line, what a backend's capabilities
refuse at validate, plan and apply (at the object's path:line:col, with the reason and what to do), and the JSON
Schema each backend gives its ``metastore:`` settings (its ``options`` allow-listed)."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.capabilities import Capabilities, GuardKind
from schemaflow.catalog import backends
from schemaflow.catalog.backends import BUILT_IN, backend_capabilities, register_backend
from schemaflow.project import Project
from tests.inprocess import schemaflow

ICEBERG_ONLY = "test_iceberg_only"      # holds Iceberg tables only, and no views
NO_VIEW_PARTITIONS = "test_no_view_partitions"
WITH_OPTIONS = "test_with_options"      # takes options: scope (a word), retries (a number), nothing else
asked: list[str] = []                   # what was asked of the test backends, in order


class Untouched:
    """A backend that records what is asked of it and does nothing: a plan may start reading ahead while the project's
    files are read, but nothing else is asked of a backend whose project is refused."""

    def __init__(self, project: Project, opening: object) -> None:
        asked.append("opened")

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        asked.append("read_ahead")

    def __getattr__(self, name: str) -> object:
        asked.append(name)
        raise AssertionError(f"{name} was asked of a refused project's backend")


@pytest.fixture(autouse=True)
def test_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test backends registered for one test (the registry as it was after it, the built-ins loaded before)."""
    for name in BUILT_IN:
        backend_capabilities(name)
    monkeypatch.setattr(backends, "_REGISTRY", dict(backends._REGISTRY))
    register_backend(ICEBERG_ONLY, capabilities=Capabilities(
        noun="Iceberg REST catalog", table_kinds=frozenset({"iceberg"}), views=False, view_partitions=False,
        renames=False, engine=False, guard=GuardKind.REQUIREMENTS, value_limit=None))(Untouched)  # type: ignore[arg-type]
    register_backend(NO_VIEW_PARTITIONS, capabilities=Capabilities(view_partitions=False))(Untouched)  # type: ignore[arg-type]
    register_backend(WITH_OPTIONS, options_schema={
        "type": "object", "additionalProperties": False,
        "properties": {"type": {}, "uri": {"type": "string", "pattern": "^https?://\\S+(?![\\s\\S])",
                                           "description": "use the catalog's http(s) address"},
                       "options": {"type": "object", "additionalProperties": False,
                                   "properties": {"scope": {"type": "string"}, "retries": {"type": "number"}}}},
    })(Untouched)  # type: ignore[arg-type]


ORDERS = "table: retail.orders\ncolumns:\n  - {name: id, type: bigint}\n  - {name: ds, type: string}\n"
EVENTS = "table: retail.events\nformat: iceberg\ncolumns:\n  - {name: id, type: bigint}\n"
DAILY = "view: retail.daily\nsql: SELECT id, ds FROM retail.orders\npartitioned_on: [ds]\n"


def project(root: Path, settings: str, **files: str) -> str:
    (root / "schemas" / "retail").mkdir(parents=True)
    (root / "schemaflow.yaml").write_text(settings)
    for name, text in files.items():
        (root / "schemas" / "retail" / f"{name}.yaml").write_text(text)
    return str(root)


def test_no_backend_is_imported_until_a_project_names_one() -> None:
    code = ("import sys; from schemaflow.catalog import live; from schemaflow.catalog.backends import backend_names, "
            "backend_capabilities; print(backend_names()); print(sorted(m for m in sys.modules if m.startswith("
            "'schemaflow.catalog.hive') or m.startswith(('pyspark', 'boto3', 'pyiceberg', 'schemaflow.catalog.glue', "
            "'schemaflow.catalog.rest')))); print(backend_capabilities('hive')); "
            "print('schemaflow.catalog.hive.backend' in sys.modules)")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, loaded, capabilities, hive = ran.stdout.splitlines()
    assert names == "('glue', 'hive', 'iceberg_rest')" and loaded == "[]"
    # The Hive metastore's: the defaults, and it registers Iceberg tables (a project moving to it)
    assert capabilities == repr(replace(Capabilities(), registers=True))
    assert hive == "True" and BUILT_IN == {"hive": "schemaflow.catalog.hive.backend", "iceberg_rest": "schemaflow.catalog.rest.backend",
                                     "glue": "schemaflow.catalog.glue.backend"}


def test_a_backend_whose_module_fails_to_import_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed as a package installs it (a dist-info naming it under the entry points), no pip: its module
    imports what is not there."""
    site = tmp_path / "site"
    (site / "broken_catalog-1.0.dist-info").mkdir(parents=True)
    (site / "broken_catalog-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-catalog\n"
                                                                   "Version: 1.0\n")
    (site / "broken_catalog-1.0.dist-info" / "entry_points.txt").write_text(
        "[schemaflow.backends]\nbroken = broken_catalog.backend\n")
    (site / "broken_catalog").mkdir()
    (site / "broken_catalog" / "__init__.py").write_text("")
    (site / "broken_catalog" / "backend.py").write_text("import catalog_driver_not_installed  # noqa\n")
    monkeypatch.syspath_prepend(str(site))
    root = project(tmp_path / "p", "metastore: {type: broken}\n", orders=ORDERS)
    for command in ("validate", "plan"):
        ran = schemaflow("--project", root, command)
        assert (ran.code, ran.out, ran.err) == (1, "", (
            "error: catalog backend 'broken' (module broken_catalog.backend) could not be imported: "
            "ModuleNotFoundError: No module named 'catalog_driver_not_installed'\n"))
    assert "broken" in schemaflow("--project", root, "validate").err and "broken_catalog.backend" not in sys.modules


def test_what_the_catalog_cannot_hold_is_refused_where_it_is_declared(tmp_path: Path) -> None:
    root = project(tmp_path, f"metastore: {{type: {ICEBERG_ONLY}}}\n", orders=ORDERS, events=EVENTS, daily=DAILY)
    catalog = f"the Iceberg REST catalog (metastore.type {ICEBERG_ONLY})"
    refused = [
        f"schemas/retail/daily.yaml:1:1: retail.daily is a view, and {catalog} holds iceberg tables only: remove it, "
        "or keep it in a catalog that holds views (a Hive metastore: metastore.type hive)",
        f"schemas/retail/orders.yaml:1:1: retail.orders is a parquet table, and {catalog} holds iceberg tables only: "
        "declare format: iceberg, or keep this table in a catalog that holds parquet tables (a Hive metastore: "
        "metastore.type hive)",
        "2 problems found; nothing was planned or applied.",
    ]
    for command in ("validate", "plan", "apply"):
        ran = schemaflow("--project", root, command, *(["--auto-approve"] if command == "apply" else []))
        assert (ran.code, ran.out, ran.err.splitlines()) == (1, "", refused), command
    json = schemaflow("--project", root, "validate", "--format", "json")
    assert json.code == 1 and '"line": 1' in json.out and "retail.events" not in json.out
    assert set(asked) <= {"opened", "read_ahead"}  # nothing read but what a plan reads ahead, nothing written


def test_a_partitioned_view_is_refused_where_views_take_no_partitions(tmp_path: Path) -> None:
    root = project(tmp_path, f"metastore: {{type: {NO_VIEW_PARTITIONS}}}\n", orders=ORDERS, daily=DAILY)
    ran = schemaflow("--project", root, "validate")
    assert (ran.code, ran.err) == (1, (
        f"schemas/retail/daily.yaml:1:1: retail.daily is partitioned on ds, and the metastore (metastore.type "
        f"{NO_VIEW_PARTITIONS}) keeps no partitions of views: remove partitioned_on (and partitions), or keep this "
        "view in a Hive metastore (metastore.type hive)\n1 problem found; nothing was planned or applied.\n"))
    assert backend_capabilities(NO_VIEW_PARTITIONS).value_limit == 4000


@pytest.mark.parametrize("settings, refused", [
    (f"metastore:\n  type: {WITH_OPTIONS}\n  uri: https://catalog.example\n  options: {{scope: all, token: s3cret}}\n",
     ["schemaflow.yaml:4:25: unknown key 'token' (expected one of: retries, scope)"]),
    (f"metastore:\n  type: {WITH_OPTIONS}\n  uri: thrift://h:9083\n  options: {{retries: many}}\n  guard: lock\n",
     ["schemaflow.yaml:3:8: uri 'thrift://h:9083' is not valid: use the catalog's http(s) address",
      "schemaflow.yaml:4:22: retries must be a number, not a string",
      "schemaflow.yaml:5:3: unknown key 'guard' (expected one of: options, type, uri)"]),
    ("metastore:\n  uri: http://h:9083\n  warehouse: w\n  options: {region: eu}\n",
     ["schemaflow.yaml:2:8: uri 'http://h:9083' is not valid: use a Thrift URI such as thrift://127.0.0.1:9083 "
      "(several: comma-separated)",
      "schemaflow.yaml:3:3: unknown key 'warehouse' (expected one of: guard, local_server, type, uri)",
      "schemaflow.yaml:4:13: unknown key 'region': metastore.type hive takes no options"]),
    ("targets:\n  prod:\n    metastore: {uri: 'thrift://h:9083 '}\n",
     ["schemaflow.yaml:3:22: uri 'thrift://h:9083 ' is not valid: use a Thrift URI such as thrift://127.0.0.1:9083 "
      "(several: comma-separated)"]),
])
def test_each_backend_checks_its_own_settings_where_they_are_written(tmp_path: Path, settings: str,
                                                                     refused: list[str]) -> None:
    ran = schemaflow("--project", project(tmp_path, settings, orders=ORDERS), "validate")
    found = f"{len(refused)} problem{'s' if len(refused) > 1 else ''} found; nothing was planned or applied."
    assert (ran.code, ran.err.splitlines()) == (1, [*refused, found])


def test_settings_a_backend_allows_pass(tmp_path: Path) -> None:
    settings = f"metastore:\n  type: {WITH_OPTIONS}\n  uri: https://catalog.example\n  options: {{scope: all}}\n"
    ran = schemaflow("--project", project(tmp_path, settings, orders=ORDERS), "validate")
    assert (ran.code, ran.out) == (0, "valid: 1 table and 0 views in 1 database (retail)\n")
