"""A schemaflow project on disk: where its files are, and its settings.

A project is a directory with ``schemas/`` (one table or view per YAML file), ``migrations/``
(ordered explicit changes) and an optional ``schemaflow.yaml`` of settings. Every setting has a
default that runs on a laptop: an embedded Derby metastore and a warehouse under ``.schemaflow/``.
Environment variables override the file, so CI can point the same project at another metastore.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from schemaflow.errors import SchemaflowError
from schemaflow.model import Database
from schemaflow.spec.settings import read_settings
from schemaflow.spec.source import Directory

STATE_DIR = ".schemaflow"
ENV_METASTORE_URI = "SCHEMAFLOW_METASTORE_URI"
ENV_WAREHOUSE_DIR = "SCHEMAFLOW_WAREHOUSE_DIR"
ENV_SPARK_MASTER = "SCHEMAFLOW_SPARK_MASTER"


@dataclass(frozen=True)
class Settings:
    metastore_uri: str | None = None          # None: embedded Derby under .schemaflow/
    warehouse_dir: str = ""                   # "": the metastore server's own (embedded: .schemaflow/warehouse)
    spark_master: str = "local[2]"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    databases: tuple[str, ...] = ()           # empty: the databases named in schemas/
    database_details: Mapping[str, Database] = field(default_factory=dict)  # declared comment, location, properties
    derby_dir: str = ""                       # where the embedded metastore lives
    invalidation: str = "strict"              # what a change that breaks a view does: strict, lenient, cascade
    exclude: tuple[str, ...] = ()             # globs on db.name of objects schemaflow leaves alone (see scope)
    after_apply: tuple[str, ...] = ()         # shell commands run after an apply (see apply.after)


@dataclass(frozen=True)
class Project:
    root: Path
    settings: Settings

    @property
    def schemas_dir(self) -> Path:
        return self.root / "schemas"


def load_project(root: str | Path, env: Mapping[str, str] | None = None) -> Project:
    """Read the project at ``root``: its settings file (if any), then the environment overrides."""
    root = Path(root).resolve()
    env = os.environ if env is None else env
    if not (root / "schemas").is_dir():
        raise SchemaflowError(f"{root}: no schemas/ directory here; run in a schemaflow project or pass --project DIR")
    raw = read_settings(Directory(root))
    state = root / STATE_DIR
    metastore = raw.get("metastore") or {}
    spark = raw.get("spark") or {}
    metastore_uri = env.get(ENV_METASTORE_URI) or metastore.get("uri")
    warehouse_dir = env.get(ENV_WAREHOUSE_DIR) or raw.get("warehouse_dir")
    if not warehouse_dir and not metastore_uri:  # a metastore server has a warehouse of its own
        warehouse_dir = str(state / "warehouse")
    settings = Settings(
        metastore_uri=metastore_uri,
        warehouse_dir=_absolute(root, warehouse_dir) if warehouse_dir else "",
        spark_master=env.get(ENV_SPARK_MASTER) or spark.get("master") or "local[2]",
        spark_conf={str(k): str(v) for k, v in sorted((spark.get("conf") or {}).items())},
        databases=managed_databases(raw),
        database_details=declared_databases(raw),
        derby_dir=str(state),
        invalidation=raw.get("invalidation") or "strict",
        exclude=tuple(str(pattern).lower() for pattern in raw.get("exclude") or ()),
        after_apply=tuple(raw.get("after_apply") or ()),
    )
    return Project(root=root, settings=settings)


def managed_databases(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``databases`` setting of a settings file's data, lower-case (empty: those schemas/ names)."""
    return tuple(str(d).lower() for d in settings.get("databases") or ())


def declared_databases(settings: Mapping[str, Any]) -> dict[str, Database]:
    """The databases whose comment, location or properties a settings file's data declares, by name.

    ``databases`` is then a mapping (``retail: {comment: ..., properties: {...}}``); a list names none.
    """
    declared = settings.get("databases")
    if not isinstance(declared, Mapping):
        return {}
    details = {}
    for name, attributes in sorted(declared.items()):
        if attributes:
            properties = {str(k): str(v) for k, v in sorted((attributes.get("properties") or {}).items())}
            details[name.lower()] = Database(name.lower(), attributes.get("comment"), attributes.get("location"),
                                             properties)
    return details


def _absolute(root: Path, path: str) -> str:
    """Relative local paths are relative to the project; URIs (s3a://, hdfs://) pass unchanged."""
    if "://" in path:
        return path
    return str((root / path).resolve())
