"""Snapshots: a live catalog saved as a JSON file, so planning and tests need no JVM.

A snapshot holds the databases that were read and every table and view in them, in the plain-data
form of ``model.to_data``, plus (optionally) the partition count of each partitioned table. The
file is sorted and indented, so the same state always gives the same bytes and diffs well in git.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, Database, from_data, to_data


@dataclass(frozen=True)
class Snapshot:
    """A saved live state: the catalog and the partition counts known for its tables."""

    catalog: Catalog
    partition_counts: Mapping[str, int] = field(default_factory=dict)


def write_snapshot(catalog: Catalog, path: str | Path, partition_counts: Mapping[str, int] | None = None) -> None:
    """Save ``catalog`` (and partition counts by ``db.name``, if given) to ``path`` as JSON."""
    data: dict[str, Any] = {
        "databases": sorted(catalog.databases),
        "objects": [to_data(obj) for _, obj in sorted(catalog.objects.items())],
    }
    if catalog.database_details:
        data["database_details"] = [details.to_data() for _, details in sorted(catalog.database_details.items())]
    if partition_counts:
        data["partition_counts"] = dict(sorted(partition_counts.items()))
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def read_snapshot(path: str | Path) -> Catalog:
    """The catalog saved at ``path``."""
    return load_snapshot(path).catalog


def load_snapshot(path: str | Path) -> Snapshot:
    """The catalog and partition counts saved at ``path``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        objects = [from_data(item) for item in data["objects"]]
        return Snapshot(
            catalog=Catalog(
                databases=tuple(sorted(data["databases"])),
                objects={obj.key: obj for obj in sorted(objects, key=lambda o: o.key)},
                database_details={d.name: d for d in map(Database.from_data, data.get("database_details", []))},
            ),
            partition_counts={str(k): int(v) for k, v in sorted(data.get("partition_counts", {}).items())},
        )
    except OSError as error:
        raise SchemaflowError(f"{path}: cannot read the snapshot: {error.strerror}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise SchemaflowError(f"{path}: not a schemaflow snapshot ({type(error).__name__}: {error})") from None
