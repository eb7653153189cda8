"""What schemaflow applied, read back from the metastore: each object's last apply and each migration.

Every write schemaflow makes stamps the object with the time and the git commit it came from, and
a table with the migrations applied to it. Those parameters live with the objects in the metastore,
so the history is the same from any clone and any CI machine. A drop takes the object's parameters
with it, so schemaflow records each drop on the object's database instead (the last drop of each name).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from collections.abc import Sequence

from schemaflow.catalog.backend import LiveSource
from schemaflow.model import APPLIED_AT_KEY, APPLIED_COMMIT_KEY, DROPPED_PREFIX, MIGRATION_PREFIX, VERSION_KEY


@dataclass(frozen=True)
class Applied:
    """One object's last apply, or one migration's."""

    at: str
    object: str
    what: str            # "version <fingerprint>", "migration <id>" or "dropped <kind> (version <fingerprint>)"
    commit: str | None


def read_history(metastore: LiveSource, databases: tuple[str, ...], objects: Sequence[str] = ()) -> list[Applied]:
    """Everything schemaflow applied in ``databases``, oldest first (ties by object, then what).

    ``objects``: ``db.name`` globs (``retail.*``); only the records of objects one of them matches.
    """
    records = []
    for database in metastore.databases():
        if database not in databases:
            continue
        for name, value in metastore.database(database).properties.items():
            if name.startswith(DROPPED_PREFIX):
                record = json.loads(value or "{}")
                what = f"dropped {record.get('kind', 'object')} (version {record.get('version') or 'none'})"
                records.append(Applied(record.get("at", "?"), f"{database}.{name[len(DROPPED_PREFIX):]}", what,
                                       record.get("commit")))
        for data in metastore.table_data(database):
            parameters = data.get("parameters", {})
            key = f"{data['dbName']}.{data['tableName']}"
            if VERSION_KEY in parameters:
                records.append(Applied(parameters.get(APPLIED_AT_KEY, "?"), key, f"version {parameters[VERSION_KEY]}",
                                       parameters.get(APPLIED_COMMIT_KEY)))
            for name, value in parameters.items():
                if name.startswith(MIGRATION_PREFIX):
                    record = json.loads(value or "{}")
                    records.append(Applied(record.get("at", "?"), key, f"migration {name[len(MIGRATION_PREFIX):]}",
                                           record.get("commit")))
    wanted = [pattern.lower() for pattern in objects]
    return sorted((r for r in records if not wanted or any(fnmatchcase(r.object, p) for p in wanted)),
                  key=lambda r: (r.at, r.object, r.what))
