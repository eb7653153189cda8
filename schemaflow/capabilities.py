"""What a catalog backend can hold and how it guards a write: its capabilities, which validate and history read.

Catalogs differ in what they hold: a Hive metastore holds every table kind, views and view partitions, and renames
tables; an Iceberg REST catalog holds Iceberg tables and views only. A backend says so once, when it registers
(``catalog.backends.register_backend(name, capabilities=...)``), as SQLMesh's engine adapters say what their
engine supports; a project that declares what its catalog cannot hold is refused at validate, where the object is
declared, rather than half-way through an apply. The defaults are the Hive metastore's.

``guard`` is how the catalog refuses a write that would overwrite what it did not see: the metastore's compare-and-swap
on a parameter (Hive, HIVE-26882), an entry's version id (Glue's ``VersionId``), or the requirements a commit asserts
(an Iceberg REST catalog's). ``value_limit`` is the longest value a database property holds, which bounds an object's
history (``catalog.history``); None: no limit. ``refusals`` is what validate, plan and apply refuse of a project because
its catalog cannot hold it. ``wording`` is how a plan words what apply runs on the catalog (``Wording``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from schemaflow.errors import Problem, Source
from schemaflow.model import Catalog
from schemaflow.spec.settings import DATABASE_VALUE


class GuardKind(Enum):
    """How a catalog refuses a stale write."""

    PARAMETER_CAS = "parameter compare-and-swap"  # the write lands only while schemaflow.version holds a value
    VERSION_ID = "version id"                     # the write names the entry's version as read
    REQUIREMENTS = "commit requirements"          # the commit asserts the table's ids and schema as read


@dataclass(frozen=True)
class Wording:
    """How a plan words the actions apply runs on a catalog, so that what a reviewer reads is what runs.

    ``sql``: the Spark SQL and metastore calls the Hive metastore's writer runs (the default). Otherwise each action is
    worded in neutral terms (``render.catalog_words``): a first line naming the change and the catalog's own call for
    it, ``calls[kind]`` (the action's kind as plan JSON names it: ``add_database``, ``iceberg_commit``...), then what it
    changes. A few kinds run one of two calls, named apart as ``kind:variant``: ``iceberg_commit:create`` (a new
    Iceberg table; ``iceberg_commit`` is a commit to a live one), ``iceberg_commit:convert`` (a Parquet table's files
    registered in place), ``create_view:replace``, ``set_parameters:view`` (a view's; ``set_parameters``, a table's)
    and ``set_columns:cascade`` (partitions following the table's columns). A kind (or variant) not in ``calls`` is one
    the catalog does not take: the plan says apply refuses it. ``database`` is what the catalog calls a database
    ("namespace"). Plain data, so a backend outside the package gives its own through
    ``register_backend(capabilities=...)`` without importing the planner or the renderers.
    """

    sql: bool = True
    database: str = "database"
    calls: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Capabilities:
    """What a catalog backend can hold and do; the defaults are the Hive metastore's."""

    noun: str = "metastore"  # how plans and messages name the catalog ("Iceberg REST catalog", "Glue Data Catalog")
    table_kinds: frozenset[str] | None = None  # the table kinds (``sql.table_kinds`` names) it holds; None: every one
    views: bool = True            # it holds views
    view_partitions: bool = True  # a view may be partitioned (``partitioned_on``)
    renames: bool = True          # it renames tables (rewrites and restores)
    engine: bool = True           # an engine analyses views as apply runs (Spark)
    drop_purges: bool = True      # dropping a managed table deletes its files (Hive); else its entry only
    guard: GuardKind = GuardKind.PARAMETER_CAS
    registers: bool = False       # it adopts an Iceberg table by its metadata file (``catalog.backend.Registering``)
    # It commits a Delta table's changes to the table's log (the Hive metastore's writer, through Spark with delta-spark);
    # a catalog that holds Delta tables without (Glue: no engine) is read and planned, and its Delta steps blocked.
    commits_delta: bool = True
    value_limit: int | None = DATABASE_VALUE.length  # the longest database property value; None: no limit
    # How many objects apply claims side by side after the first (its client safe to share between threads): claims are
    # one request each, and a catalog served over HTTP answers several at once.
    claim_threads: int = 1
    wording: Wording = Wording()  # how plans word its actions: the Hive metastore's Spark SQL by default


HIVE_METASTORE = Capabilities()  # what a backend registered without capabilities can do: the defaults


def refusals(capabilities: Capabilities, backend: str, declared: Catalog, moving_from: str | None = None) -> list[Problem]:
    """What of ``declared`` the catalog of ``backend`` (registered with ``capabilities``) cannot hold, each at the
    object's declaration, with the reason and what to do; ``moving_from``: the backend of the catalog the project moves
    from, which holds such a table as declared, and from which it cannot move in this release (``plan.moving``)."""
    catalog = f"the {capabilities.noun} (metastore.type {backend})"
    held = _held(capabilities)
    problems = []
    for table in declared.tables():
        kinds = capabilities.table_kinds
        if kinds is not None and table.format not in kinds and moving_from is not None:
            problems.append(Problem(table.source or Source(table.key), (
                f"{table.key} is a {table.format} table, and {catalog} holds {held} only: moving from the catalog of "
                f"metastore.moving_from (type {moving_from}), a {table.format} table there cannot move in this release "
                "(only Iceberg tables are registered): keep it in that catalog, declared in a project of its own, or "
                f"declare {' or '.join(f'format: {kind}' for kind in sorted(kinds))} for a new, empty table")))
        elif kinds is not None and table.format not in kinds:
            problems.append(Problem(table.source or Source(table.key), (
                f"{table.key} is a {table.format} table, and {catalog} holds {held} only: declare "
                f"{' or '.join(f'format: {kind}' for kind in sorted(kinds))}, or keep this table in a catalog that "
                f"holds {table.format} tables (a Hive metastore: metastore.type hive)")))
    for view in declared.views():
        if not capabilities.views:
            problems.append(Problem(view.source or Source(view.key), (
                f"{view.key} is a view, and {catalog} holds {held} only: remove it, or keep it in a catalog that "
                "holds views (a Hive metastore: metastore.type hive)")))
        elif view.partitioned_on and not capabilities.view_partitions:
            problems.append(Problem(view.source or Source(view.key), (
                f"{view.key} is partitioned on {', '.join(view.partitioned_on)}, and {catalog} keeps no partitions "
                "of views: remove partitioned_on (and partitions), or keep this view in a Hive metastore "
                "(metastore.type hive)")))
    return problems


def _held(capabilities: Capabilities) -> str:
    """What a catalog holds, in words: "iceberg tables and views"."""
    kinds = capabilities.table_kinds
    tables = "tables" if kinds is None else f"{' and '.join(sorted(kinds))} tables" if kinds else "no tables"
    return f"{tables} and views" if capabilities.views else tables
