"""Drift: what changed in the metastore outside schemaflow since schemaflow last wrote each object.

Every write schemaflow makes records ``state_digest`` of the object as the write left it: one short
hash per aspect (columns, partitions, storage, comment, managed properties, a view's SQL). Drift
reads each object again and names the aspects whose hash is no longer the recorded one: a Spark
job's ``ADD COLUMNS``, a hand-made property change. A declared object whose records are gone
(re-created from a notebook, which drops every parameter) or that is missing is reported as such.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from schemaflow.model import APPLIED_AT_KEY, APPLIED_COMMIT_KEY, APPLIED_STATE_KEY, changed_aspects, state_digest

if TYPE_CHECKING:
    from schemaflow.catalog.metastore import Metastore


MISSING = "missing"          # declared, but not in the metastore
UNRECORDED = "unrecorded"    # declared and there, but without schemaflow's record of it


@dataclass(frozen=True)
class Drift:
    object: str
    aspects: tuple[str, ...]   # what changed, or (MISSING,) or (UNRECORDED,)
    applied_at: str | None = None
    commit: str | None = None

    def describe(self) -> str:
        if self.aspects == (MISSING,):
            return f"{self.object}: declared but not in the metastore (dropped outside schemaflow, or never applied)"
        if self.aspects == (UNRECORDED,):
            return (f"{self.object}: no record of what schemaflow applied (re-created outside schemaflow, "
                    "or never applied): plan shows how it differs")
        since = f"since schemaflow applied it at {self.applied_at or '?'} (commit {self.commit or 'unknown'})"
        return f"{self.object}: {', '.join(self.aspects)} changed {since}"


def read_drift(metastore: Metastore, declared: Iterable[str], databases: tuple[str, ...]) -> list[Drift]:
    """Every object in ``databases`` that changed since schemaflow wrote it, and every ``declared``
    object that is missing or carries no record; sorted by name."""
    from schemaflow.catalog.metastore import to_model

    declared = set(declared)
    drifts, seen = [], set()
    for database in sorted(set(databases) & set(metastore.databases())):
        for data in metastore.table_data(database):
            key = f"{data['dbName']}.{data['tableName']}"
            seen.add(key)
            parameters = data.get("parameters", {})
            recorded = parameters.get(APPLIED_STATE_KEY)
            if not recorded:
                if key in declared:
                    drifts.append(Drift(key, (UNRECORDED,)))
                continue
            changed = changed_aspects(recorded, state_digest(to_model(data)))
            if changed:
                drifts.append(Drift(key, changed, parameters.get(APPLIED_AT_KEY), parameters.get(APPLIED_COMMIT_KEY)))
    drifts += [Drift(key, (MISSING,)) for key in declared - seen]
    return sorted(drifts, key=lambda d: d.object)
