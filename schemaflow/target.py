"""A project's names on a target: the same schemas applied to dev, staging and prod.

A target may give a database of the project another name (``retail`` -> ``dev_retail``). The
desired catalog is read under the project's names, checked, and then carried over whole onto the
target's: objects, the databases they are in, what views read (their SQL included), migrations
and sources. Everything after that (plan, apply, drift, history) sees only the target's names, so
planning is the same everywhere, and a plan names exactly what it touches. ``import`` carries the
live catalog the other way, so the files it writes hold the project's names.
"""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Mapping

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Catalog, Migration, Object, Source, Table, View, split_key
from schemaflow.spec.settings import SETTINGS_FILE
from schemaflow.sql.views import ViewSqlError, with_databases_renamed


def on_target(catalog: Catalog, names: Mapping[str, str]) -> Catalog:
    """``catalog`` under a target's database names (``names``: project name -> target name; see ``check_targets``)."""
    return _renamed(catalog, names)


def check_targets(catalog: Catalog, targets: Mapping[str, Mapping[str, str]]) -> None:
    """Raise ``SpecError`` unless each target maps only databases of the project, and no two onto one name."""
    problems = [problem for target, names in sorted(targets.items()) for problem in _name_problems(catalog, names, target)]
    if problems:
        raise SpecError(problems)


def from_target(catalog: Catalog, names: Mapping[str, str]) -> Catalog:
    """``catalog`` (read from the target) under the project's names: what ``import`` writes."""
    return _renamed(catalog, {target: project for project, target in names.items()})


def _renamed(catalog: Catalog, names: Mapping[str, str]) -> Catalog:
    if not names:
        return catalog
    renamed = _Renaming(names)
    return replace(
        catalog,
        databases=tuple(sorted(renamed.database(d) for d in catalog.databases)),
        objects=dict(sorted((o.key, o) for o in map(renamed.object, catalog.objects.values()))),
        migrations=tuple(map(renamed.migration, catalog.migrations)),
        sources=dict(sorted((t.key, t) for t in map(renamed.table, catalog.sources.values()))),
        database_details={renamed.database(k): replace(d, name=renamed.database(k))
                          for k, d in sorted(catalog.database_details.items())},
    )


def target_patterns(patterns: tuple[str, ...], names: Mapping[str, str]) -> tuple[str, ...]:
    """``exclude`` globs (``db.name``) on the target: a database part that is a project database is renamed."""
    def renamed(pattern: str) -> str:
        database, name = split_key(pattern)
        return f"{names.get(database, database)}.{name}"
    return tuple(map(renamed, patterns))


def _name_problems(catalog: Catalog, names: Mapping[str, str], target: str) -> list[Problem]:
    """Every mapped database is one of the project's, and no two land on one name."""
    where = Source(SETTINGS_FILE)
    on = f"target {target}"
    problems = [Problem(where, f"database_names of {on} maps {database}, which is not a database of this project "
                               f"({', '.join(catalog.databases)}): remove it or fix its name")
                for database in sorted(set(names) - set(catalog.databases))]
    landed: dict[str, str] = {}
    for database in catalog.databases:
        name = names.get(database, database)
        if name in landed:
            problems.append(Problem(where, f"{landed[name]} and {database} would both be {name} on {on}: "
                                           "give each a name of its own in database_names"))
        landed.setdefault(name, database)
    return problems


class _Renaming:
    """Carries model values over to other database names."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)

    def database(self, name: str) -> str:
        return self.names.get(name, name)

    def key(self, key: str) -> str:
        """``db.name`` or ``db.name.column``, its database renamed."""
        database, _, rest = key.partition(".")
        return f"{self.database(database)}.{rest}"

    def table(self, table: Table) -> Table:
        return replace(table, database=self.database(table.database))

    def object(self, obj: Object) -> Object:
        if isinstance(obj, Table):
            return self.table(obj)
        return self.view(obj)

    def view(self, view: View) -> View:
        partitions = view.partitions
        if partitions is not None and partitions.derive_from is not None:
            partitions = replace(partitions, derive_from=self.key(partitions.derive_from))
        try:
            sql = with_databases_renamed(view.sql, self.names)
        except ViewSqlError:  # a live view's text sqlglot cannot read (import): kept as Spark stores it
            sql = view.sql
        return replace(
            view,
            database=self.database(view.database),
            sql=sql,
            partitions=partitions,
            reads=tuple(sorted(map(self.key, view.reads))),
            uses=dict(sorted((self.key(k), columns) for k, columns in view.uses.items())),
            lineage={column: tuple(map(self.key, origins)) for column, origins in view.lineage.items()},
        )

    def migration(self, migration: Migration) -> Migration:
        return replace(migration, changes=tuple(replace(c, table=self.key(c.table)) for c in migration.changes))
