"""The library calls behind each command: desired state, live state, plan, apply.

The CLI parses arguments and picks exit codes; everything it does goes through these functions,
so a test (or another program) can drive schemaflow the same way. The JVM is started only when
live state is needed, and only once per process. Planning between two git refs needs neither the
JVM nor a metastore: the desired state at the base ref plays the live state.

Each way of planning returns a ``Review``: the plan and what a reviewer reads beside it.
"""
from __future__ import annotations

import itertools
import json
import os
from importlib.util import find_spec
from functools import partial
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Collection, Iterable, Mapping

from schemaflow.code_settings import check_approved, unapproved
from schemaflow.claims import ELSEWHERE, RUNNING, parse_claim, standing
from schemaflow.errors import Problem, SchemaflowError, SpecError
from schemaflow.catalog.iceberg_metadata import INSTALL
from schemaflow.capabilities import Capabilities, refusals
from schemaflow.catalog.backend import PlanHints, StoredFunction
from schemaflow.catalog.backends import backend_capabilities, settings_problems
from schemaflow.catalog.live import Live
from schemaflow.catalog.hive import registrable
from schemaflow.catalog.hive.thrift_reader import lenient
from schemaflow.model import Catalog, Object, Source, Stored, Table, View, catalog_digest, split_key
from schemaflow.plan.backups import NO_BACKUP_DROPS, BackupDrops
from schemaflow.plan.invalidation import created_schema_mode
from schemaflow.plan.live_code import LiveViews
from schemaflow.plan.moving import Moving
from schemaflow.plan.readers import declared_readers
from schemaflow.plan.steps import RegisterTableAction
from schemaflow.plan.kinds import StepKind
from schemaflow.sql.code_calls import Reach, declared_calls, resolved_calls
from schemaflow.sql.ddl import view_text
from schemaflow.plan.catalog_fit import check_restorable
from schemaflow.plan.plan import Basis, LiveFiles, Plan, PlanBuilder, applied
from schemaflow.plan.view_code import calls_code, plan_code
from schemaflow.plan.settings_changes import SettingsChange, settings_digest, since_applied
from schemaflow.project import ENV_METASTORE_URI, Project, load_project
from schemaflow.scope import Scope
from schemaflow.target import check_targets, from_target, on_target, target_patterns
from schemaflow.render.review import Review
from schemaflow.spark_version import SparkVersion, spark_name, spark_version
from schemaflow.spec import load_catalog
from schemaflow.sql.table_kinds import ColumnChanges, table_kind

if TYPE_CHECKING:
    from schemaflow.catalog.history import Applied


def desired_state(project: Project) -> Catalog:
    """The catalog the project's YAML declares, on its target; raises ``SpecError`` listing every problem."""
    declared = replace(load_catalog(project.root, project.settings.databases),
                       database_details=project.settings.database_details)
    desired = _on_target(project, declared)
    scope = _scope(project)
    problems = [Problem(obj.source or Source(key), f"{key} is declared here and excluded by '{pattern}' in "
                        "schemaflow.yaml: remove the file, or narrow the pattern")
                for key, obj in desired.objects.items() for pattern in [scope.excluded_by(key)] if pattern]
    problems += backend_problems(project, desired)
    if problems:
        raise SpecError(problems)
    return desired


def backend_problems(project: Project, desired: Catalog) -> list[Problem]:
    """What the project's catalog backend refuses: its ``metastore:`` settings against the backend's schema, and what
    of ``desired`` the catalog cannot hold (``capabilities.refusals``), each where it is written."""
    name, moving = project.settings.metastore_type, project.settings.moving_from
    return settings_problems(project) + refusals(backend_capabilities(name), name, desired,
                                                 str(moving["type"]) if moving else None)


def _catalog(project: Project) -> tuple[str, Capabilities]:
    """The backend the project's settings name (its ``metastore.type``) and its capabilities, as a plan is made for
    them (``PlanBuilder``'s ``backend`` and ``capabilities``)."""
    name = project.settings.metastore_type
    return name, backend_capabilities(name)


def capabilities(project: Project) -> Capabilities:
    """What the project's catalog can do, as apply runs a plan on it (histories' limit, claims side by side)."""
    return backend_capabilities(project.settings.metastore_type)


def _plannable(*catalogs: Catalog) -> None:
    """Refuse to plan catalogs that declare an Iceberg table where pyiceberg is not installed: every commit to
    an Iceberg table goes through it (``catalog.hive.iceberg_commit``). Raised before any plan is made, so nothing
    is read for it or written; validate checks such tables without it."""
    if find_spec("pyiceberg") is not None:
        return
    iceberg: dict[str, Table] = {}  # the first catalog's declaration of each: the head's, before the base's
    for catalog in catalogs:
        for table in catalog.tables():
            kind = table_kind(table.format, table.data_source)
            if kind is not None and kind.column_changes is ColumnChanges.ICEBERG:  # committed through pyiceberg
                iceberg.setdefault(table.key, table)
    problems = [Problem(table.source or Source(key), (
        f"{key} is an Iceberg table, and creating or changing one needs pyiceberg, which is not installed here: "
        f"{INSTALL}; nothing was planned or applied"))
        for key, table in sorted(iceberg.items())]
    if problems:
        raise SpecError(problems)


def _on_target(project: Project, declared: Catalog, check: bool = True) -> Catalog:
    """A catalog the project declares, under its target's database names (see ``target``); every target's
    names are checked against it, so that validate finds a wrong one before any plan for that target
    (not against a base ref's, which may lack a database the settings now name)."""
    if check:
        check_targets(declared, project.settings.targets)
    return on_target(declared, project.settings.database_names)


def _named_databases(project: Project) -> tuple[str, ...]:
    """The databases the settings name, on the target, as ``desired_state`` will have them; empty when the
    files name them (known only once they are parsed)."""
    return on_target(Catalog(databases=project.settings.databases), project.settings.database_names).databases


def _scope(project: Project) -> Scope:
    return Scope(target_patterns(project.settings.exclude, project.settings.database_names),
                 project.settings.manage_undeclared)


def owned(project: Project, live: Catalog, desired: Catalog) -> tuple[Catalog, tuple[str, ...]]:
    """The part of ``live`` that is schemaflow's to plan, and a notice for each object left alone (see ``scope``)."""
    return _scope(project).owned(live, desired)


def applied_state(desired: Catalog, release: SparkVersion | None = None) -> Catalog:
    """The live catalog that a complete apply of ``desired`` through Spark ``release`` (the installed pyspark's
    unless given) leaves behind.

    Every object carries what its stamp writes (``plan.applied``: the version, the managed property
    keys, so a property later removed from the schemas is planned as unset, and a table's migrations).
    """
    def applied_object(obj: Object) -> Object:
        stamped = applied(obj, desired.migrations)
        if isinstance(stamped, View):  # created through Spark SQL, which stores its release's mode by default,
            return replace(stamped, schema_mode=created_schema_mode(release or spark_version()),
                           sql=view_text(stamped))  # with the text apply stores
        return stamped
    return replace(desired, objects={key: applied_object(obj) for key, obj in desired.objects.items()})


def review_live(project: Project, live: Live, *, allow_destructive: bool = False,
                drop_backups: BackupDrops = NO_BACKUP_DROPS, check_partitions: bool = False, recompile: tuple[str, ...] = (),
                desired: Catalog | None = None, read: Catalog | None = None) -> Review:
    """Plan the project's desired state (``desired``, when the caller has read it already) against its
    live metastore (see ``plan.plan.PlanBuilder``), as ``read`` holds it when the caller has read it already."""
    builder = _live_builder(project, live, desired, read, allow_destructive=allow_destructive,
                            drop_backups=drop_backups, check_partitions=check_partitions, recompile=recompile)
    return Review(builder.build(), reads=_reads(builder.live, builder.desired))


def _live_builder(project: Project, live: Live, desired: Catalog | None = None, read: Catalog | None = None,
                  **options: Any) -> PlanBuilder:
    """What a plan of the project's desired state against the live metastore is made from (``desired`` and
    ``read``, the live databases, when the caller has read them already); ``options`` as ``PlanBuilder``'s."""
    from schemaflow.gitsource import commit_of  # GitPython loads only with a git on the PATH: where it is needed

    release = project.settings.release  # before Spark starts: a pyspark of another release than declared is refused
    if desired is None:
        live.read_ahead(_named_databases(project))
        desired = desired_state(project)
    _plannable(desired)
    reader = live.reader
    if read is None:
        read = live.read(desired.databases)
    current, left_alone = owned(project, read, desired)
    target = project.settings.target
    backend, capabilities = _catalog(project)
    return PlanBuilder(desired, current, catalog=backend, capabilities=capabilities,
                       count_partitions=reader.count_partitions,
                       stale_partitions=live.stale_partitions,
                       unfinished_partitions=partial(live.stale_partitions, exact=True), commit=commit_of(project.root),
                       invalidation=project.settings.invalidation, list_partitions=reader.partition_values,
                       type_rule=reader.enforces_type_rule(), release=release,
                       readers=declared_readers(project.settings.readers),
                       files=_live_files(project, lenient(reader.stored), lenient(reader.data_folders)),
                       metastore=reader.endpoint, target=target, against=f"target {target}" if target else None,
                       left_alone=left_alone, notices=_unapproved_code(project),
                       settings=since_applied(project.settings.declared, read, desired.databases),
                       view_problems=partial(_view_problems, project, desired, live),
                       allowed=project.settings.allowed_calls, checked=project.settings.checked_calls,
                       approved_code=project.settings.approved_code,
                       live_views=LiveViews(read, reader.views, partial(_held_otherwise, project, live)),
                       moving=_moving(project, live, desired.databases), **options)


def _moving(project: Project, live: Live, databases: tuple[str, ...]) -> Moving | None:
    """The catalog the project moves from (``metastore.moving_from``), read in ``databases`` (read only); None: none."""
    source, moving = live.source, project.settings.moving_from
    if source is None or moving is None:
        return None
    new, old = project.settings.metastore_type, str(moving["type"])
    capabilities = backend_capabilities(new)
    return Moving(source.read(databases), source.reader.endpoint,
                  f"the {backend_capabilities(old).noun} moved from (metastore.moving_from.type {old})",
                  f"the {capabilities.noun} (metastore.type {new})", capabilities.registers, capabilities.views,
                  bool(moving.get("forget")))


def _live_files(project: Project, stored: Callable[[str], Stored | None],
                folders: Callable[[str], tuple[str, ...] | None]) -> LiveFiles:
    """What a plan reads of the files of the live tables it rewrites or converts: through ``stored`` and
    ``folders``, each None where the metastore does not answer (the apply meets what they would have found)."""
    def unregistrable(table: Table) -> str | None:
        found = folders(table.key)
        return None if found is None else registrable.unregistrable(found, {c.name for c in table.all_columns},
                                                                   table.data_source)
    return LiveFiles(stored, project.settings.spark_cores, unregistrable)


def _unapproved_code(project: Project) -> tuple[str, ...]:
    """A warning for each setting that runs code which the operator has not approved: apply would refuse."""
    settings = project.settings
    return tuple(f"not approved, so apply refuses to run: {setting.describe()}"
                 for setting in unapproved(settings.code, settings.approved_code))


def check_code(project: Project, doing: str) -> None:
    """Refuse, before anything runs, while a setting that runs code is not approved (see ``code_settings``)."""
    check_approved(project.settings.code, project.settings.approved_code, doing)


def check_plan_code(plan: Plan, project: Project) -> None:
    """Refuse, before anything runs, while a view of ``plan`` calls code the operator has not approved
    (see ``plan.view_code``)."""
    check_approved(plan_code(plan.steps, project.settings.allowed_calls), project.settings.approved_code, "in apply",
                   "the plan has views")


def check_settings(plan: Plan, path: Path, project: Project) -> None:
    """Refuse a plan made with other settings than the project's now: they decide what apply runs
    (hooks, Spark's settings, what is left alone), and the reviewer read the plan's."""
    if plan.settings != settings_digest(project.settings.declared):
        raise SchemaflowError(f"{path} is refused, nothing was applied: it was made with other settings than "
                              f"{project.root / 'schemaflow.yaml'} holds now, and the settings decide what apply runs "
                              "(where they run code, the files of the project folder they cover count too). Plan again, "
                              "and review what it says of the settings.")


def _view_problems(project: Project, desired: Catalog, live: Live, views: tuple[str, ...],
                   unchecked: Mapping[str, str]) -> dict[str, str]:
    """Why each of ``views`` cannot be created as declared, where its SQL is written: Spark's refusal of those not
    ``unchecked`` (see ``catalog.hive.view_check``), and, of those, a function called that the metastore does not hold.

    Spark is shown nothing that would run code the operator has not approved (``plan.view_code``): not the
    ``unchecked`` views, nor the other declared views whose SQL calls code (nor, so, the views that read them), nor a
    view that calls a declared function the metastore holds otherwise than declared (``_undeclared_functions``)."""
    checked = project.settings.checked_calls
    shown = [view for view in views if view not in unchecked]
    hidden = {view.key for view in desired.views()
              if view.key not in shown and calls_code(view.sql, view.database, checked)}
    otherwise = _undeclared_functions(project, desired, live, hidden)
    checking = [view for view in shown if view not in otherwise]
    problems = live.view_problems(replace(desired, objects={key: obj for key, obj in desired.objects.items()
                                                            if key not in hidden and key not in otherwise}),
                                  checking) if checking else {}
    return ({key: f"{_sql_source(live.project, desired.objects[key])}: {problem}" for key, problem in problems.items()}
            | {key: reason for key, reason in otherwise.items() if key in views}
            | _missing_functions(project, desired, live, unchecked))


def _missing_functions(project: Project, desired: Catalog, live: Live, views: Iterable[str]) -> dict[str, str]:
    """Why each of ``views`` that calls a function neither built in, nor declared, nor held by the metastore cannot
    be created, at the first such call (read over Thrift: nothing is loaded); the others are left out."""
    allowed = project.settings.allowed_calls
    calls = {key: [found for found in resolved_calls(view.sql, view.database, allowed) if found.reach == Reach.METASTORE]
             for key in views if isinstance(view := desired.objects.get(key), View)}
    names = sorted({found.function for found in itertools.chain(*calls.values())})
    held = live.functions(names) if names else {}
    missing = {}
    for key, found in calls.items():
        absent = [call for call in found if held is not None and held.get(call.function) is None]
        if absent:
            call, view = absent[0], desired.objects[key]
            missing[key] = (f"{_sql_source(live.project, view, call.call.line, call.call.col)}: {call.call.name}(...) is "
                            f"neither a built-in function of {spark_name(allowed.release)}, nor declared in "
                            f"schemaflow.yaml (functions), nor a function of the metastore ({call.function}): Spark "
                            "cannot resolve it")
    return missing


def _undeclared_functions(project: Project, desired: Catalog, live: Live, hidden: set[str]) -> dict[str, str]:
    """The views (but ``hidden``) that call a declared function which the metastore does not hold as declared, each
    with why: the operator approved the declaration's class and resources, not what the metastore holds now. Where
    the backend cannot tell, every view that calls one is."""
    settings = project.settings
    calling = {view.key: declared_calls(view.sql, view.database, settings.checked_calls)
               for view in desired.views() if view.key not in hidden}
    names = sorted(set().union(*calling.values()))
    stored = live.functions(names) if names else {}
    if stored is None:
        return {key: f"it calls {', '.join(sorted(called))}, which this catalog cannot read to compare with the "
                     "declaration the operator approved: neither Spark nor apply resolves it here"
                for key, called in calling.items() if called}
    otherwise = {name: reason for name in names
                 if (reason := _stored_otherwise(name, settings.functions[name], stored[name]))}
    return {key: "; ".join(otherwise[name] for name in sorted(called & otherwise.keys()))
            for key, called in calling.items() if called & otherwise.keys()}


def _held_otherwise(project: Project, live: Live, names: Collection[str]) -> frozenset[str]:
    """Which of the declared functions ``names`` the metastore holds otherwise than declared (read over Thrift: nothing
    is loaded); every one, where the backend cannot tell."""
    stored = live.functions(names)
    if stored is None:
        return frozenset(names)
    return frozenset(name for name in names if _stored_otherwise(name, project.settings.functions[name], stored[name]))


def _stored_otherwise(name: str, declared: Mapping[str, Any], stored: StoredFunction | None) -> str | None:
    """Why the metastore's function ``name`` is not the ``declared`` one (None: it is)."""
    resources = tuple((kind.lower(), uri) for resource in declared.get("resources") or () for kind, uri in resource.items())
    if stored is not None and (stored.class_name, stored.resources) == (declared["class"], resources):
        return None
    held = ("does not hold it" if stored is None else f"holds it as class {stored.class_name!r}"
            + "".join(f", {kind} {uri!r}" for kind, uri in stored.resources))
    return (f"it calls {name}, and the metastore {held}, not as schemaflow.yaml declares it (functions: {name}): the "
            "operator approved the declared function, so apply does not create the view, nor does Spark check it, "
            "until the metastore holds that one (or the declaration is changed to what it holds, and approved)")


def _sql_source(project: Project, view: Object, line: int = 0, col: int = 0) -> Source | None:
    """Where the view's file has its ``sql:`` (its file is read again: this is for a rare error only), or the 1-based
    ``line`` and ``col`` within it."""
    from schemaflow.spec.yamlpos import load_yaml

    if view.source is None:
        return None
    doc = load_yaml(project.root / view.source.path, view.source.path)
    return doc.within(("sql",), line, col) if line else doc.at("sql")


def make_plan(project: Project, live: Live, *, allow_destructive: bool = False,
              drop_backups: BackupDrops = NO_BACKUP_DROPS, recompile: tuple[str, ...] = (), desired: Catalog | None = None, read: Catalog | None = None) -> Plan:
    """The plan of :func:`review_live`; ``recompile`` names views to re-create from their declared SQL."""
    return review_live(project, live, allow_destructive=allow_destructive, drop_backups=drop_backups,
                       recompile=recompile,
                       desired=desired, read=read).plan


def view_partitions_plan(project: Project, live: Live) -> tuple[Plan, tuple[str, ...]]:
    """The view-partition steps of the plan against the metastore, and the views left out.

    A view that the plan also creates or changes is left out: its partitions follow once ``apply``
    has made the view itself what the schemas say.
    """
    builder = _live_builder(project, live)
    steps = builder.planned.steps
    partitioned = {s.object for s in steps if s.kind == StepKind.VIEW_PARTITIONS}
    changed = {s.object for s in steps if s.kind != StepKind.VIEW_PARTITIONS}
    return builder.build(objects=partitioned - changed), tuple(sorted(partitioned & changed))


def review_snapshot(project: Project, snapshot: Path, *, allow_destructive: bool = False,
                    drop_backups: BackupDrops = NO_BACKUP_DROPS) -> Review:
    """Plan against a saved live state, with no JVM: partition counts come from the snapshot if it has them."""
    from schemaflow.catalog.snapshot import load_snapshot

    desired = desired_state(project)
    _plannable(desired)
    saved = load_snapshot(snapshot)
    read = saved.catalog.in_databases(desired.databases)
    current, left_alone = owned(project, read, desired)
    backend, capabilities = _catalog(project)
    plan = PlanBuilder(desired, current, catalog=backend, capabilities=capabilities,
                       allow_destructive=allow_destructive, drop_backups=drop_backups,
                       count_partitions=saved.partition_counts.get, basis=Basis.SNAPSHOT,
                       invalidation=project.settings.invalidation, release=project.settings.release,
                       readers=declared_readers(project.settings.readers),
                       allowed=project.settings.allowed_calls, live_views=LiveViews(read),
                       against=f"the snapshot {snapshot}", left_alone=left_alone,
                       settings=since_applied(project.settings.declared, saved.catalog, desired.databases)).build()
    return Review(plan, counts_from=str(snapshot) if saved.partition_counts else None,
                  reads=_reads(current, desired))


@dataclass(frozen=True)
class ReviewHints:
    """What helps a review between git refs (partition counts, sizes: ``PlanHints``), and where it comes from in
    words, or why there is none (``said``)."""

    hints: PlanHints | None
    source: str | None   # where the hints come from, as the review names it; None: there are none
    said: str            # the same, or why there are none, as the line "Planning ..." ends

    @classmethod
    def none(cls, why: str = "") -> ReviewHints:
        return cls(None, None, f"without a metastore: partition counts are unknown{why}")


def review_hints(project: Project, base: str, environ: Mapping[str, str] | None = None) -> ReviewHints:
    """Where a review between git refs reads its hints: never from an address the change under review wrote.

    The pull-request job runs the head's files, and its author writes them: a ``metastore.uri`` there would make
    the job dial (with the job's network, and keys where it has any) wherever the author likes. So the address is
    the operator's (``SCHEMAFLOW_METASTORE_URI`` in ``environ``, the job's environment), else that of the
    settings at ``base`` (merged, and reviewed, before), read with the backend those settings name; the head's
    settings are never used for it. Without either, the review has no hints, as without a metastore."""
    from schemaflow.gitsource import commit_files, reading_at, require_git

    require_git(reading_at(base))  # said as the error it is, not as why the review has no hints
    environ = os.environ if environ is None else environ
    try:
        with commit_files(project.root, base) as files:
            at_base = load_project(project.root, environ, project.settings.target, files=files)
        hints = Live(at_base, direct=True).hints()
    except SpecError:  # the review reports it, at BASE:path:line:col
        return ReviewHints.none(f" (the settings at {base} do not validate)")
    except SchemaflowError as error:  # a target or a backend the settings at base do not have
        return ReviewHints.none(f" (the settings at {base} give none here: {error})")
    if hints is not None:
        source = (f"the metastore {ENV_METASTORE_URI} names" if environ.get(ENV_METASTORE_URI)
                  else f"{hints.source} (the settings at {base})")
        return ReviewHints(hints, source, f"with partition counts from {source}")
    if project.settings.metastore_uri:  # written by the change under review: not dialled
        return ReviewHints.none(f" (a review reads no metastore the change under review names: set "
                                f"{ENV_METASTORE_URI} in the job, or merge metastore.uri first)")
    return ReviewHints.none()


def review_refs(project: Project, base: str, head: str | None = None, *, allow_destructive: bool = False,
                drop_backups: BackupDrops = NO_BACKUP_DROPS, hints: ReviewHints | None = None) -> Review:
    """Plan what the schemas at git ref ``head`` (None: the working tree) change from those at ``base``.

    No JVM: the base's desired state, as a complete apply of it leaves the metastore, plays the live
    state; both refs are read from the repository's objects, without a checkout. Partition counts
    come from a thrift:// metastore when the operator or the settings at ``base`` name one (``review_hints``,
    unless given: one Thrift call each, see ``catalog.hive.thrift_reader``), else they are unknown.
    """
    from schemaflow.gitsource import commit_of, desired_at, settings_at

    desired = desired_state(project) if head is None else _on_target(project, desired_at(project.root, head))
    settings = project.settings.declared if head is None else settings_at(project.root, head)
    applied = applied_state(_on_target(project, desired_at(project.root, base), check=False)
                            .in_databases(desired.databases), project.settings.release)
    _plannable(desired, applied)
    # As against the metastore: a table the base managed and the head declares as a source is left alone.
    before, left_alone = owned(project, applied, desired)
    hints = hints or review_hints(project, base)
    read = hints.hints
    backend, capabilities = _catalog(project)
    plan = PlanBuilder(desired, before, catalog=backend, capabilities=capabilities, allow_destructive=allow_destructive,
                       drop_backups=drop_backups, commit=commit_of(project.root, head),
                       count_partitions=read.count_partitions if read else None, basis=Basis.GIT,
                       invalidation=project.settings.invalidation, release=project.settings.release,
                       readers=declared_readers(project.settings.readers),
                       allowed=project.settings.allowed_calls,
                       files=_live_files(project, read.stored, read.data_folders) if read else None,
                       against=base, left_alone=left_alone,
                       settings=SettingsChange(settings, settings_at(project.root, base), settings)).build()
    return Review(plan, head=head or "the working tree", counts_from=hints.source,
                  reads=_reads(before, desired))


def _reads(live: Catalog, desired: Catalog) -> dict[str, tuple[str, ...]]:
    """What each view reads: as declared, else as the live side knows it."""
    return {view.key: view.reads for catalog in (live, desired) for view in catalog.views()}


def restoring(project: Project, live: Live, key: str) -> Plan:
    """The plan that swaps the backup a rewrite kept of the table ``key`` (the project's name for it) back in
    (``plan.restore``), against the live metastore, on the project's target."""
    from schemaflow.gitsource import commit_of
    from schemaflow.plan.restore import restore_plan

    database, _, name = key.lower().partition(".")
    if not name:
        raise SchemaflowError(f"{key!r}: name the table as database.table")
    on = on_target(Catalog(databases=(database,)), project.settings.database_names).databases[0]
    backend, capabilities = _catalog(project)
    check_restorable(f"{on}.{name}", capabilities, backend)  # before the catalog is read
    return restore_plan(live.read((on,)), f"{on}.{name}", metastore=live.reader.endpoint,
                        target=project.settings.target, commit=commit_of(project.root),
                        catalog=backend)


def history(project: Project, live: Live, objects: tuple[str, ...] = ()) -> list[Applied]:
    """What schemaflow applied to the project's databases, of the ``objects`` globs if any (see ``catalog.history``)."""
    return live.history(desired_state(project).databases, objects)


@dataclass(frozen=True)
class Imported:
    """What an import wrote and left out."""

    written: list[Path]               # a file for each table and view of the database
    skipped: list[str]                # "db.name: why", for each that could not be written (plan would drop it)
    left_alone: tuple[str, ...]       # a notice for each that ``scope`` leaves alone
    sources: list[Path]               # a source: file for each table or view its views read from elsewhere
    imports: tuple[str, ...] = ()     # the other managed databases its views read, not yet imported


def import_database(project: Project, live: Live, database: str, out: Path, overwrite: bool = False) -> Imported:
    """Write schema files for the tables and views of ``database`` (see ``spec.export``), and ``source:``
    files for what its views read that the import does not write (see ``_sources_read``).

    ``database`` is the project's name for it: on a target that names it otherwise, the target's
    database is read, and the files hold the project's names.
    """
    from schemaflow.spec.export import write_schemas, write_sources

    names = project.settings.database_names
    read, scope = live.read((names.get(database.lower(), database.lower()),)), _scope(project)
    adopted = Catalog(objects={key: obj for key, obj in read.objects.items() if scope.adopts(obj)})
    kept, left_alone = owned(project, read, adopted)
    objects = from_target(kept, names).objects
    sources, unread, imports = _sources_read(project, live, database.lower(), objects, out)
    written, skipped = write_schemas([o for key, o in objects.items() if key not in unread], out, overwrite)
    declared, refused = write_sources(sources, out)
    skipped += refused + [f"{key}: {why}" for key, why in sorted(unread.items())]
    return Imported(written, sorted(skipped), left_alone, declared, imports)


def _sources_read(project: Project, live: Live, imported: str, objects: Mapping[str, Object],
                  out: Path) -> tuple[list[Object], dict[str, str], tuple[str, ...]]:
    """What the views among ``objects`` (of the database ``imported``) read that the import does not write
    and no file under ``out`` declares: live objects to declare as ``source:`` files, why each view that
    reads what the metastore does not have is not written, and the other managed databases to import.

    A table or view of a database the project does not manage, or one left alone in this one (an
    Iceberg or Delta table), becomes a source. One of another database the project manages is that
    database's import's to write.
    """
    from schemaflow.sql.views import ViewSqlError, tables_read

    wanted: dict[str, list[str]] = {}
    for view in (o for o in objects.values() if isinstance(o, View)):
        try:
            reads = tables_read(view.sql, view.database)
        except ViewSqlError:
            continue  # written as it is: validate says what is wrong with it
        for key in reads:
            database, name = split_key(key)
            if key not in objects and not (out / database / f"{name}.yaml").exists():
                wanted.setdefault(key, []).append(view.key)
    managed, names = set(project.settings.databases), project.settings.database_names
    sources: list[Object] = []
    unread: dict[str, str] = {}
    imports: set[str] = set()
    databases: dict[str, Catalog] = {}  # each read once
    for key, readers in sorted(wanted.items()):
        database = split_key(key)[0]
        if database in managed and database != imported:
            imports.add(database)
            continue
        if database not in databases:
            databases[database] = from_target(live.read((names.get(database, database),)), names)
        found = databases[database].objects.get(key)
        if found is None:
            for reader in readers:
                unread.setdefault(reader, f"it reads {key}, which the metastore does not have: the view fails when "
                                          "queried; drop it, or leave it alone with exclude: in schemaflow.yaml")
            continue
        sources.append(found)
    return sources, unread, tuple(sorted(imports))


def hash_migrations(project: Project) -> Path:
    """Write ``migrations/schemaflow.sum`` for the migration files as they are now; its path."""
    from schemaflow.spec.loader import migration_files
    from schemaflow.spec.migrations import MIGRATIONS_DIR, SUM_FILE, sum_text
    from schemaflow.spec.source import Directory

    files = migration_files(Directory(project.root))
    path = project.root / MIGRATIONS_DIR / SUM_FILE
    path.parent.mkdir(exist_ok=True)
    path.write_text(sum_text({file.name: file.read_bytes() for file in files.values()}))
    return path


def drift(project: Project, live: Live) -> list:
    """What changed outside schemaflow in the project's databases (see ``catalog.drift``)."""
    from schemaflow.catalog.drift import read_drift

    desired = desired_state(project)
    scope = _scope(project)
    return read_drift(live.reader, desired.objects, desired.databases,
                      lambda obj: scope.leaves_alone(obj, desired) is not None)


def snapshot(project: Project, live: Live, out: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Save the live state of the project's databases to ``out``, with the partition count of each
    partitioned table (see ``catalog.snapshot``); the databases saved, and a line for each table whose own
    metadata could not be read (saved as the metastore mirrors it, with why: a plan against the snapshot refuses
    to change it)."""
    from schemaflow.catalog.snapshot import write_snapshot

    desired = desired_state(project)
    current = live.read(desired.databases)
    counts = {t.key: live.reader.count_partitions(t.key) for t in current.tables() if t.partition_columns}
    write_snapshot(current, out, partition_counts=counts)
    unread = tuple(f"{t.key}: saved as the metastore mirrors it, its own metadata could not be read: {t.unreadable}"
                   for t in current.tables() if t.unreadable)
    return desired.databases, unread


def check_claims(plan: Plan, take_over: bool = False) -> None:
    """Refuse to apply over another apply's claims unless that apply is gone.

    A claim from a process that no longer runs on this host is taken over (the plan finishes its
    work); one from another host may still be running, so only ``take_over`` takes it.
    """
    for key, version in sorted(plan.guards.items()):
        claim = parse_claim(version)
        if claim is None:
            continue
        found = standing(claim)
        if found == RUNNING:
            raise SchemaflowError(f"{key} is being modified concurrently by another schemaflow apply "
                                  f"({claim.describe()}); nothing was applied: wait for it to finish, then plan again")
        if found == ELSEWHERE and not take_over:
            raise SchemaflowError(f"{key} is claimed by an apply on another machine ({claim.describe()}); nothing "
                                  "was applied. If that apply has stopped, run apply --take-over to finish its work")


def check_moved(plan: Plan, live: Live) -> None:
    """Refuse, before anything is claimed, a plan that registers a table whose entry in the catalog moved from names
    another metadata file now than when planned (a commit there since): registered, the new catalog would not have it
    (``plan.moving``). A commit between this check and the register is not seen: the register steps say so."""
    registers = [action for step in plan.steps for action in step.body if isinstance(action, RegisterTableAction)]
    if not registers:
        return
    source = live.source
    if source is None:
        raise SchemaflowError("the plan registers tables from the catalog the project moves from, which schemaflow.yaml "
                              "names no more (metastore.moving_from): nothing was applied; plan again")
    held = source.read(tuple(sorted({split_key(action.object)[0] for action in registers})))
    moved = [action.object for action in registers
             if not (isinstance(table := held.get(action.object), Table) and table.iceberg is not None
                     and table.iceberg.metadata_location == action.metadata_location)]
    if moved:
        raise SchemaflowError(f"{', '.join(moved)}: {source.where()} holds another metadata file than the plan "
                              "registers (a commit there since it was made, or the entry is gone): nothing was applied; "
                              "stop the writers that use it, then plan again")


def load_plan(path: Path) -> Plan:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise SchemaflowError(f"{path}: no such plan file; write one with schemaflow plan --out {path}") from None
    except ValueError as error:
        raise SchemaflowError(f"{path}: not a schemaflow plan ({error}); write one with schemaflow plan --out") from error
    try:
        return Plan.from_data(data)
    except ValueError as error:  # its own sentence: an edited file, or another format
        reason = str(error)
    except KeyError as error:
        reason = f"it has no {error.args[0]!r} field"
    except (TypeError, AttributeError):
        reason = "a field holds another kind of value than schemaflow writes there"
    raise SchemaflowError(f"{path}: refused, {reason}; make a new one with schemaflow plan --out")


def check_saved(plan: Plan, path: Path, project: Project, live: Live) -> None:
    """Refuse a saved plan that is not this project's plan for this metastore, as it stands now.

    The checksum only shows that the file is as schemaflow wrote it: anyone can recompute it. What
    binds a plan is checked here: it was made against a metastore, this one, from the project's
    schemas and migrations as they are now; none of the objects it touches changed since; and
    planning again now makes exactly its steps, so an edited plan is refused whatever its checksum.
    What the files alone decide (where it was planned, its settings, its schemas and migrations) is
    checked before the metastore is reached, so a stale plan is refused without starting a JVM; a plan
    of no steps, which runs nothing, is then not checked against the metastore at all (nor is a JVM started).
    """
    from schemaflow.plan.review_check import differences
    from schemaflow.plan.staleness import stale_counts, stale_objects

    refused = f"{path} is refused, nothing was applied:"
    noun = capabilities(project).noun
    catalog = f"the {noun}"
    if plan.basis != Basis.METASTORE:
        raise SchemaflowError(f"{path} was planned against {plan.basis}, not {catalog}: apply it with "
                              f"apply --reviewed, which plans against {catalog} and checks it is the same")
    if plan.target != project.settings.target:
        raise SchemaflowError(f"{refused} it was planned for {_target_name(plan.target)}, and this run is for "
                              f"{_target_name(project.settings.target)}. Plan again with this target, or apply it "
                              "with the target it was planned for (--target or SCHEMAFLOW_TARGET).")
    check_settings(plan, path, project)
    desired = desired_state(project)
    if plan.project != catalog_digest(desired):
        raise SchemaflowError(f"{refused} it was made from other schemas or migrations than {project.root} holds "
                              "now (another project, or files changed since). Plan again.")
    if plan.is_empty:  # it runs nothing, so nothing the metastore holds now can make it overwrite a change
        return
    endpoint = live.writer().endpoint
    if plan.metastore != endpoint:
        raise SchemaflowError(f"{refused} it was planned against {catalog} {plan.metastore}, and this project "
                              f"reaches {endpoint}. Plan again here.")
    read = live.read(plan.databases)  # one read, for both the staleness and the plan made again
    now = make_plan(project, live, allow_destructive=plan.allow_destructive, drop_backups=plan.drop_backups,
                    desired=desired, read=read)
    stale = stale_objects(plan, read) + stale_counts(plan, live.reader.count_partitions)
    if stale:
        raise SchemaflowError(f"{path} is stale: {catalog} changed since it was planned; nothing was applied. "
                              "Plan again.\n  " + "\n  ".join(stale))
    other = differences(plan, now)
    if other:
        raise SchemaflowError(f"{refused} its steps are not what this project plans for this {noun} (was it "
                              "edited?). Plan again.\n  " + "\n  ".join(other))


def _target_name(target: str | None) -> str:
    return f"target {target}" if target else "no target"
