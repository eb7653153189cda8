"""The settings file, ``schemaflow.yaml``: checked against ``schemas/settings.json`` before use.

Every key is optional (``schemaflow.project`` supplies the defaults and environment overrides);
what is written must still have the right shape, so a misspelt key is an error, not a silent default.
A folder (or a broken link) where the file belongs is an error too, not a project without settings.

Where schemaflow reads and writes is set by ``metastore.uri``, ``warehouse_dir`` and ``spark.master`` (which
the operator's ``SCHEMAFLOW_METASTORE_URI`` and its kin override), never by ``spark.conf``: a Spark setting
that names another metastore, warehouse or master would win over them all, so it is refused where it is.
"""
from __future__ import annotations

from typing import Any

from schemaflow.errors import Problem, SpecError
from schemaflow.spec.schema import check_shape
from schemaflow.spec.source import ProjectFile, ProjectFiles
from schemaflow.spec.objects import Limit
from schemaflow.spec.yamlpos import Document, load_yaml

SETTINGS_FILE = "schemaflow.yaml"


def read_settings(files: ProjectFiles) -> dict[str, Any]:
    """The settings of the project ``files`` hold (``{}`` when it has no settings file); raises ``SpecError``."""
    file = files.open(SETTINGS_FILE)
    return {} if file is None else check_settings(file)


def check_settings(path: ProjectFile) -> dict[str, Any]:
    """The settings at ``path`` as a plain dict (empty file: ``{}``); raises ``SpecError``.

    Positions are reported against the file's name, as schema files are against the project root.
    """
    doc = load_yaml(path, path.name)
    data = {} if doc.data is None else doc.data
    problems = check_shape(doc, data, "settings")
    if problems:
        raise SpecError(problems)
    targets = {name: target or {} for name, target in (data.get("targets") or {}).items()}
    problems = []
    for where, settings in [((), data)] + [(("targets", name), target) for name, target in targets.items()]:
        conf = (settings.get("spark") or {}).get("conf") or {}
        for key in conf:  # Spark settings are text: "1.10" or "NO" as written, not as YAML 1.1 reads them
            conf[key] = doc.written(*where, "spark", "conf", key) or conf[key]
            instead = _connection_setting(key)
            if instead:
                problems.append(Problem(doc.key(*where, "spark", "conf", key), (
                    f"spark.conf may not set {key}: it would point schemaflow elsewhere than its settings and the "
                    f"operator's environment say; {instead}")))
    databases = data.get("databases")
    if isinstance(databases, dict):
        problems += [problem for name, attributes in databases.items()
                     for problem in _database_problems(doc, name, attributes or {})]
    problems += [problem for name, target in targets.items() for problem in _name_problems(doc, name, target)]
    if problems:
        raise SpecError(problems)
    return data


# Spark settings that choose the metastore, the warehouse or the master, and the setting to use instead.
_CONNECTION_KEYS = {
    "spark.master": "set spark.master (or SCHEMAFLOW_SPARK_MASTER) instead",
    "spark.hadoop.hive.metastore.uris": "set metastore.uri (or SCHEMAFLOW_METASTORE_URI) instead",
    "spark.hive.metastore.uris": "set metastore.uri (or SCHEMAFLOW_METASTORE_URI) instead",
    "spark.hadoop.metastore.thrift.uris": "set metastore.uri (or SCHEMAFLOW_METASTORE_URI) instead",
    "spark.sql.warehouse.dir": "set warehouse_dir (or SCHEMAFLOW_WAREHOUSE_DIR) instead",
    "spark.hadoop.hive.metastore.warehouse.dir": "set warehouse_dir (or SCHEMAFLOW_WAREHOUSE_DIR) instead",
    "spark.sql.catalogImplementation": "schemaflow always works through the Hive metastore: remove it",
}
# The embedded metastore's database: schemaflow keeps it in .schemaflow/, a server keeps its own.
_CONNECTION_PREFIXES = ("spark.hadoop.javax.jdo.option.", "spark.hive.javax.jdo.option.")


def _connection_setting(key: str) -> str | None:
    """What to write instead of the Spark setting ``key`` when it chooses where schemaflow connects, else None."""
    if key.startswith(_CONNECTION_PREFIXES):
        return "set metastore.uri to a metastore server (or SCHEMAFLOW_METASTORE_URI) instead"
    return _CONNECTION_KEYS.get(key)


def _name_problems(doc: Document, target: str, settings: dict[str, Any]) -> list[Problem]:
    """A target's database names: no two databases of the project may share one there."""
    names = settings.get("database_names") or {}
    first: dict[str, str] = {}
    problems = []
    for database, name in names.items():
        if name.lower() in first:
            problems.append(Problem(doc.at("targets", target, "database_names", database), (
                f"{database} and {first[name.lower()]} are both named {name} on target {target}: "
                "give each database a name of its own")))
        first.setdefault(name.lower(), database)
    return problems


# The metastore's columns for a database's attributes (package.jdo of the bundled Hive 2.3.10).
_DATABASE_COMMENT = Limit("database comment", 4000, "DBS.DESC")
_DATABASE_LOCATION = Limit("database location", 4000, "DBS.DB_LOCATION_URI")
_DATABASE_KEY = Limit("database property key", 180, "DATABASE_PARAMS.PARAM_KEY")
DATABASE_VALUE = Limit("database property value", 4000, "DATABASE_PARAMS.PARAM_VALUE")


def _database_problems(doc: Document, name: str, attributes: dict[str, Any]) -> list[Problem]:
    """A declared database's attributes within the metastore's limits; its texts made what was written."""
    problems: list[Problem] = []
    where = ("databases", name)
    for key in ("comment", "location"):
        if key in attributes:
            limit = _DATABASE_COMMENT if key == "comment" else _DATABASE_LOCATION
            limit.check(attributes[key], doc.at(*where, key), problems)
    if attributes.get("comment") is not None and not attributes["comment"].strip():
        attributes["comment"] = None  # the metastore reports a blank comment as none
    properties = attributes.get("properties") or {}
    for key in properties:
        properties[key] = doc.written(*where, "properties", key) or str(properties[key])
        _DATABASE_KEY.check(key, doc.key(*where, "properties", key), problems)
        DATABASE_VALUE.check(properties[key], doc.at(*where, "properties", key), problems)
    return problems
