"""What schemaflow owns in the managed databases: decided once, between reading and diffing.

Within a managed database schemaflow owns every table and view, except:

- objects the project excludes: ``exclude:`` in ``schemaflow.yaml`` lists globs on ``db.name``
  (``scratch.*``, ``retail.tmp_*``), for a notebook's scratch tables or another team's objects;
- objects of a kind it cannot manage, whoever made them: Delta Lake and Hudi tables, Hive
  transactional (ACID) tables, tables of a SerDe or Spark data source it does not know; Iceberg
  tables it has not stamped (one it created or changed is its own: removing its file drops it), Iceberg tables of
  a format version its writer does not write (``spec.iceberg.unwritten``; declared ones too, which the plan leaves
  alone, ``plan.plan``), and tables whose own metadata could not be read (the notice says why);
- tables of a kind registered since its format was left alone (``TableKind.manages_undeclared``), unless the
  project lists the kind in ``manage_undeclared:``: registering a kind never makes the tables of its format that
  no file declares drops;
- sources: tables the project's views read and declares with ``source:`` (see ``spec.sources``).

Such an object is taken out of the live state before the diff, so no plan ever touches it (above
all, never drops it), and the plan lists it as not managed, with why. An object the project
declares is never taken out: declaring one that ``exclude`` names is an error (``spec`` says where),
and one of a kind schemaflow cannot manage is planned as such, which blocks with the reason.
This module is the one place these rules live, like Alembic's ``include_object`` filters.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from schemaflow.model import Catalog, Object, Table
from schemaflow.spec.iceberg import unwritten
from schemaflow.sql.storage import KNOWN_SERDES
from schemaflow.sql.table_kinds import CUSTOM, FOREIGN_FORMATS, table_kind


@dataclass(frozen=True)
class Scope:
    """The project's ``exclude`` globs, lower-case, matched against ``db.name``, and the table kinds whose undeclared
    tables it manages beyond those that always are (``manage_undeclared``)."""

    exclude: tuple[str, ...] = ()
    manage_undeclared: frozenset[str] = frozenset()

    def excluded_by(self, key: str) -> str | None:
        """The first ``exclude`` glob that names ``key``, or None."""
        return next((pattern for pattern in self.exclude if fnmatchcase(key, pattern)), None)

    def owned(self, live: Catalog, declared: Catalog) -> tuple[Catalog, tuple[str, ...]]:
        """``live`` without the objects schemaflow leaves alone, and a line for each of those, sorted.

        Objects ``declared`` declares stay: the project asked for them. Its sources go: it declared
        them to read them, not to manage them.
        """
        left = {key: reason for key, obj in live.objects.items() for reason in [self.leaves_alone(obj, declared)]
                if reason}
        kept = {key: obj for key, obj in live.objects.items() if key not in left}
        notices = tuple(f"not managed: {key} ({reason}); schemaflow leaves it alone" for key, reason in sorted(left.items()))
        return replace(live, objects=kept), notices

    def adopts(self, obj: Object) -> bool:
        """Whether an import writes a file for ``obj``, which a plan leaves alone while no file declares it: an
        Iceberg table whose metadata was read (once declared, it is schemaflow's), unless ``exclude`` names it."""
        return (isinstance(obj, Table) and obj.iceberg is not None and self.excluded_by(obj.key) is None
                and unwritten(obj) is None)

    def leaves_alone(self, obj: Object, declared: Catalog) -> str | None:
        """Why schemaflow leaves the live object ``obj`` alone, or None when it is schemaflow's."""
        if obj.key in declared.objects:
            return None
        source = declared.sources.get(obj.key)
        where = source.source.path if source is not None and source.source else "schemas/"
        pattern = self.excluded_by(obj.key)
        return (f"declared as a source in {where}" if source is not None else
                f"excluded by '{pattern}' in schemaflow.yaml" if pattern else unmanageable(obj, self.manage_undeclared))


def unmanageable(obj: Object, manage_undeclared: frozenset[str] = frozenset()) -> str | None:
    """Why schemaflow cannot manage ``obj``, or None when it can; ``manage_undeclared``: the kinds the project
    has its undeclared tables managed of."""
    if not isinstance(obj, Table):
        return None
    if obj.unreadable:  # its kind's own metadata, which says what it is, was not read
        return f"its own metadata could not be read: {obj.unreadable}"
    if (format_version := unwritten(obj)) is not None:
        return format_version
    if obj.iceberg is not None and obj.version is not None:  # an Iceberg table schemaflow created or changed
        return None
    properties = {key.lower(): value for key, value in obj.properties.items()}
    table_type = properties.get("table_type", "").upper()
    typed = next((foreign.what for foreign in FOREIGN_FORMATS if foreign.table_type == table_type), None)
    if typed:
        return typed
    if properties.get("transactional", "").lower() == "true":
        return "a transactional (ACID) table, which Hive's compactor rewrites"
    if obj.data_source:
        provided = next((foreign.what for foreign in FOREIGN_FORMATS if foreign.name == obj.format), None)
        if provided:
            return provided
        if table_kind(obj.format, data_source=True) is None:
            return f"a table of the Spark data source '{obj.format}', which schemaflow does not create"
    elif obj.format == CUSTOM:
        # Hudi and Delta tables synced to Hive are read through input formats of their own.
        classes = (obj.input_format or "").lower()
        return next((foreign.what for foreign in FOREIGN_FORMATS if any(word in classes for word in foreign.class_words)),
                    f"a table read through the input format {obj.input_format}, which ships with neither Hive nor Spark")
    elif obj.serde is not None and obj.serde not in KNOWN_SERDES:
        return f"a table of the SerDe {obj.serde}, which ships with neither Hive nor Spark"
    kind = table_kind(obj.format, obj.data_source)
    if kind is not None and not kind.manages_undeclared and kind.name not in manage_undeclared:
        return (f"a table of the kind '{kind.name}', whose tables no file declares schemaflow leaves alone unless "
                f"schemaflow.yaml lists it in manage_undeclared")
    return None
