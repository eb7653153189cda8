"""What schemaflow applied, read back from the metastore: each object's last apply and each migration.

Every write schemaflow makes stamps the object with the time and the git commit it came from, and
a table with the migrations applied to it. Those parameters live with the objects in the metastore,
so the history is the same from any clone and any CI machine.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from schemaflow.model import APPLIED_AT_KEY, APPLIED_COMMIT_KEY, MIGRATION_PREFIX, VERSION_KEY

if TYPE_CHECKING:
    from schemaflow.catalog.metastore import Metastore


@dataclass(frozen=True)
class Applied:
    """One object's last apply, or one migration's."""

    at: str
    object: str
    what: str            # "version <fingerprint>" or "migration <id>"
    commit: str | None


def read_history(metastore: Metastore, databases: tuple[str, ...]) -> list[Applied]:
    """Everything schemaflow applied in ``databases``, oldest first (ties by object, then what)."""
    records = []
    for database in metastore.databases():
        if database not in databases:
            continue
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
    return sorted(records, key=lambda r: (r.at, r.object, r.what))
