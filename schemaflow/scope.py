"""What schemaflow owns in the managed databases: decided once, between reading and diffing.

Within a managed database schemaflow owns every table and view, except:

- objects the project excludes: ``exclude:`` in ``schemaflow.yaml`` lists globs on ``db.name``
  (``scratch.*``, ``retail.tmp_*``), for a notebook's scratch tables or another team's objects;
- objects of a kind it cannot manage, whoever made them: Iceberg, Delta Lake and Hudi tables,
  Hive transactional (ACID) tables, tables of a SerDe or Spark data source it does not know.

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

# Spark data-source providers whose tables keep their schema in files or logs of their own.
TABLE_FORMATS = {"delta": "a Delta Lake table", "hudi": "a Hudi table", "iceberg": "an Iceberg table"}
# Spark data-source providers and Hive formats schemaflow knows (see catalog.metastore.storage_format).
KNOWN_PROVIDERS = frozenset({"parquet", "orc", "avro", "json", "csv", "text"})
HIVE_FORMATS = frozenset({"parquet", "orc", "avro", "textfile", "sequencefile", "rcfile", "jsonfile"})
DATA_SOURCE_MARK = " (Spark data source)"  # how catalog.metastore names a data-source table's format


@dataclass(frozen=True)
class Scope:
    """The project's ``exclude`` globs, lower-case, matched against ``db.name``."""

    exclude: tuple[str, ...] = ()

    def excluded_by(self, key: str) -> str | None:
        """The first ``exclude`` glob that names ``key``, or None."""
        return next((pattern for pattern in self.exclude if fnmatchcase(key, pattern)), None)

    def owned(self, live: Catalog, declared: Catalog) -> tuple[Catalog, tuple[str, ...]]:
        """``live`` without the objects schemaflow leaves alone, and a line for each of those, sorted.

        Objects ``declared`` declares stay: the project asked for them.
        """
        left: dict[str, str] = {}
        for key, obj in live.objects.items():
            if key in declared.objects:
                continue
            pattern = self.excluded_by(key)
            reason = f"excluded by '{pattern}' in schemaflow.yaml" if pattern else unmanageable(obj)
            if reason:
                left[key] = reason
        kept = {key: obj for key, obj in live.objects.items() if key not in left}
        notices = tuple(f"not managed: {key} ({reason}); schemaflow leaves it alone" for key, reason in sorted(left.items()))
        return replace(live, objects=kept), notices


def unmanageable(obj: Object) -> str | None:
    """Why schemaflow cannot manage ``obj``, or None when it can."""
    if not isinstance(obj, Table):
        return None
    properties = {key.lower(): value for key, value in obj.properties.items()}
    if properties.get("table_type", "").upper() == "ICEBERG":
        return TABLE_FORMATS["iceberg"]
    if properties.get("transactional", "").lower() == "true":
        return "a transactional (ACID) table, which Hive's compactor rewrites"
    if obj.format.endswith(DATA_SOURCE_MARK):
        provider = obj.format[:-len(DATA_SOURCE_MARK)]
        if provider in TABLE_FORMATS:
            return TABLE_FORMATS[provider]
        if provider not in KNOWN_PROVIDERS:
            return f"a table of the Spark data source '{provider}', which schemaflow does not know"
        # Until schemaflow declares data-source tables, one it finds was made by someone else.
        return f"a Spark data-source table (USING {provider}), which schemaflow does not manage yet"
    if obj.format not in HIVE_FORMATS:
        return f"a table of the SerDe {obj.format}, which schemaflow does not know"
    return None
