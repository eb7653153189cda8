"""What schemaflow applied, read back from the catalog: every apply of each object, and each migration.

Every write schemaflow makes stamps the object with the time and the git commit it came from, and
a table with the migrations applied to it. A stamp holds the last apply only, and a drop takes the
object's parameters with it, so each apply also adds a line to the object's history, kept on its
database (``schemaflow.history.<name>``): when, what it did (create, change or drop), the kind and
version of the object, the commit. Those parameters live in the metastore, so the history is the
same from any clone and any CI machine, and a reader needs no JVM (the Thrift reader reads them).

A database parameter's value holds 4,000 characters in a Hive metastore (``DATABASE_PARAMS.PARAM_VALUE``;
measured on Derby, which cuts a longer value short without an error, and PostgreSQL's schema is the same;
another catalog says its own limit, its capabilities' ``value_limit``), about thirty applies of one object: the
oldest are then let go and counted (``earlier``), so the history of years of applies stays one bounded value per
object. Objects schemaflow applied before it kept histories show their last stamp and last drop, as the stamps
and drop records still say.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from schemaflow.capabilities import HIVE_METASTORE
from schemaflow.catalog.backend import CatalogReader, LiveEntry
from schemaflow.catalog.metadata_bounds import metadata_bounds
from schemaflow.model import (APPLIED_AT_KEY, APPLIED_COMMIT_KEY, DROPPED_PREFIX, HISTORY_PREFIX, MIGRATION_PREFIX,
                              VERSION_KEY)

DROP, MIGRATION = "drop", "migration"


@dataclass(frozen=True)
class Applied:
    """One apply of an object, or of a migration."""

    at: str
    object: str
    what: str            # "version <fingerprint>", "migration <id>" or "dropped <kind> (version <fingerprint>)"
    commit: str | None
    change: str = ""     # create, change, drop or migration; "" for a stamp from before histories were kept


@dataclass(frozen=True)
class Entry:
    """A line of an object's history, as the executor writes it."""

    at: str
    change: str          # create, change or drop
    kind: str            # table or view
    version: str | None
    commit: str | None

    def applied(self, key: str) -> Applied:
        what = (f"dropped {self.kind} (version {self.version or 'none'})" if self.change == DROP
                else f"version {self.version}")
        return Applied(self.at, key, what, self.commit, self.change)


def with_entries(value: str | None, entries: Sequence[Entry], limit: int | None = HIVE_METASTORE.value_limit) -> str:
    """An object's history ``value`` (None: none yet) with ``entries`` added, the oldest let go (and
    counted) until it fits in a database parameter of the catalog: ``limit`` characters, its ``value_limit``
    (``capabilities``; None: all kept)."""
    history = _parsed(value)
    applies = history["applies"] + [[e.at, e.change, e.kind, e.version, e.commit] for e in entries]
    earlier = history["earlier"]
    while True:
        text = json.dumps({"applies": applies, "earlier": earlier}, separators=(",", ":"))
        if limit is None or len(text.encode("utf-16-le")) // 2 <= limit or len(applies) == 1:
            return text
        applies, earlier = applies[1:], earlier + 1


def _parsed(value: str | None) -> dict[str, Any]:
    """A history value as written; an unreadable one (cut short by another tool) starts again."""
    try:
        data = json.loads(value or "")
        return {"applies": [list(a) for a in data["applies"] if len(a) >= 5], "earlier": int(data.get("earlier", 0))}
    except (ValueError, KeyError, TypeError):
        return {"applies": [], "earlier": 0}


def _entries(value: str) -> list[Entry]:
    return [Entry(str(at), str(change), str(kind), _text(version), _text(commit))
            for at, change, kind, version, commit, *_ in _parsed(value)["applies"]]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def read_history(metastore: CatalogReader, databases: tuple[str, ...], objects: Sequence[str] = ()) -> list[Applied]:
    """Everything schemaflow applied in ``databases``, oldest first; within a second, an object's applies in
    the order they ran, then by object and what.

    ``objects``: ``db.name`` globs (``retail.*``); only the records of objects one of them matches.
    """
    history: list[Applied] = []  # the objects' histories, each in the order it was written
    others: list[Applied] = []   # the last stamps, drops and the migrations, as the objects and databases say
    with metadata_bounds():
        for database in metastore.databases():
            if database in databases:
                properties = metastore.database(database).properties
                history += _database_history(database, properties, others)
                others += _stamps(metastore.entries(database))
    # A stamp and a drop record repeat the last line of their object's history: each apply is shown once.
    written = {(r.at, r.object, r.what) for r in history}
    records = history + sorted((r for r in others if (r.at, r.object, r.what) not in written),
                               key=lambda r: (r.object, r.what))
    wanted = [pattern.lower() for pattern in objects]
    return sorted((r for r in records if not wanted or any(fnmatchcase(r.object, p) for p in wanted)),
                  key=lambda r: (r.at, r.object))  # stable: ties keep the order above


def _database_history(database: str, properties: Mapping[str, str], dropped: list[Applied]) -> list[Applied]:
    """The histories ``database``'s ``properties`` keep, each in the order it was written; its drop records are
    added to ``dropped``."""
    history: list[Applied] = []
    for name, value in sorted(properties.items()):
        if name.startswith(HISTORY_PREFIX):
            history += [entry.applied(f"{database}.{name[len(HISTORY_PREFIX):]}") for entry in _entries(value)]
        elif name.startswith(DROPPED_PREFIX):
            record = json.loads(value or "{}")
            dropped.append(Entry(record.get("at", "?"), DROP, record.get("kind", "object"), record.get("version"),
                                 record.get("commit")).applied(f"{database}.{name[len(DROPPED_PREFIX):]}"))
    return history


def _stamps(entries: Iterable[LiveEntry]) -> list[Applied]:
    """The last stamp and the migrations each of ``entries`` records in its parameters."""
    others: list[Applied] = []
    for entry in entries:
        parameters, key = entry.parameters, entry.object.key
        if parameters.get(VERSION_KEY):  # NO_VERSION: none
            others.append(Applied(parameters.get(APPLIED_AT_KEY, "?"), key, f"version {parameters[VERSION_KEY]}",
                                  parameters.get(APPLIED_COMMIT_KEY)))
        for name, value in parameters.items():
            if name.startswith(MIGRATION_PREFIX):
                record = json.loads(value or "{}")
                others.append(Applied(record.get("at", "?"), key, f"migration {name[len(MIGRATION_PREFIX):]}",
                                      record.get("commit"), MIGRATION))
    return others
