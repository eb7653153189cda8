"""The settings file, ``schemaflow.yaml``: checked against ``schemas/settings.json`` before use.

Every key is optional (``schemaflow.project`` supplies the defaults and environment overrides);
what is written must still have the right shape, so a misspelt key is an error, not a silent default.
A folder (or a broken link) where the file belongs is an error too, not a project without settings.

Where schemaflow reads and writes is set by ``metastore.uri``, ``warehouse_dir`` and ``spark.master`` (which
the operator's ``SCHEMAFLOW_METASTORE_URI`` and its kin override), never by ``spark.conf``: a Spark setting
that names another metastore, warehouse or master would win over them all, so it is refused where it is.

A ``spark.conf`` key is checked as Spark receives it: pyspark hands each setting to Spark's launcher as
``--conf KEY=VALUE``, which splits at the first ``=``, so a key holding ``=`` would reach Spark as
another key (``spark.driver.extraJavaOptions=-XX:...``) than the one every rule here reads. Keys are
therefore Spark's own spelling alone (letters, digits, ``.``, ``_``, ``-``), or refused where written.

A setting that runs code (a hook, a Spark setting schemaflow does not know to be safe: ``code_settings``) may
name no path whose files its approval would not cover: one that leads out of the project folder, starts with
``~``, is built as the code runs, or is absolute, but below a folder the operator or the system supplies code
from (``code_settings.CodePaths``). It is refused where it is written.
"""
from __future__ import annotations

import re
from typing import Any

from schemaflow.code_settings import (CODE_FILES, FUNCTIONS, HOOKS, OPERATOR_PATHS_VARIABLE, SYSTEM_FOLDERS, CodePaths,
                                      declared_code, named_paths, spark_code_reason)
from schemaflow.errors import Problem, SpecError
from schemaflow.model import Source
from schemaflow.output_safety import one_line
from schemaflow.spec.layout import SETTINGS_FILE
from schemaflow.spec.schema import check_shape
from schemaflow.spec.source import ProjectFile, ProjectFiles
from schemaflow.spec.objects import Limit
from schemaflow.spec.yamlpos import Document, load_yaml


def read_settings(files: ProjectFiles, operator: tuple[str, ...] | None = ()) -> dict[str, Any]:
    """The settings of the project ``files`` hold (``{}`` when it has no settings file); raises ``SpecError``.

    ``operator``: the folders the operator supplies code from, below which settings that run code may name files
    (``code_settings.CodePaths``; None where they are not known, as in a pull request's job). With the settings,
    under ``code_files``, when any of them runs code: each file of the project folder that code can run, with the
    id of its content (``spec.code_files``), which their approval covers.
    """
    file = files.open(SETTINGS_FILE)
    if file is None:
        return {}
    settings = check_settings(file, CodePaths(files.checkout(), operator))
    covered = files.code_files() if declared_code(settings) else {}
    return settings | ({CODE_FILES: covered} if covered else {})


def check_settings(path: ProjectFile, paths: CodePaths | None = None) -> dict[str, Any]:
    """The settings at ``path`` as a plain dict (empty file: ``{}``); raises ``SpecError``.

    Positions are reported against the file's name, as schema files are against the project root. A path that a
    setting which runs code may not name (``paths``; by default, the system's folders alone) is a problem at
    that setting.
    """
    paths = paths or CodePaths()
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
            if not SPARK_KEY.fullmatch(key):
                problems.append(Problem(doc.key(*where, "spark", "conf", key), (
                    f"spark.conf key {key!r} is not a Spark setting's name: Spark's launcher splits a setting at "
                    "its first '=' and keeps no other character as written, so Spark would receive another key "
                    "than this one; write the key alone (letters, digits, '.', '_', '-') and all else in its value")))
                continue
            instead = _connection_setting(key)
            if instead:
                problems.append(Problem(doc.key(*where, "spark", "conf", key), (
                    f"spark.conf may not set {key}: it would point schemaflow elsewhere than its settings and the "
                    f"operator's environment say; {instead}")))
            elif spark_code_reason(key, conf[key]):
                problems += _path_problems(doc.at(*where, "spark", "conf", key), f"spark.conf {key}", conf[key], paths)
        problems += [problem for index, command in enumerate(settings.get(HOOKS) or ())
                     for problem in _path_problems(doc.at(*where, HOOKS, index), HOOKS, command, paths, command=True)]
    databases = data.get("databases")
    if isinstance(databases, dict):
        problems += [problem for name, attributes in databases.items()
                     for problem in _database_problems(doc, name, attributes or {})]
    problems += [problem for name, target in targets.items() for problem in _name_problems(doc, name, target)]
    problems += _function_problems(doc, data.get(FUNCTIONS) or {})
    problems += [problem for index, reader in enumerate(data.get("readers") or ())
                 for problem in _reader_problems(doc, index, reader)]
    if problems:
        raise SpecError(problems)
    return data


def _path_problems(source: Source, setting: str, value: str, paths: CodePaths, command: bool = False) -> list[Problem]:
    """A problem for each path the setting that runs code ``setting: value`` names and may not (``paths``)."""
    return [Problem(source, (
        f"{setting} names '{one_line(path.text)}', {reason}: an approval of code covers the setting as written and the files "
        "of the project folder, nothing else; name a file of the project folder by its path relative to that folder, "
        f"and one the operator installs by its absolute path, below a folder of {OPERATOR_PATHS_VARIABLE} or the "
        f"system's ({', '.join(SYSTEM_FOLDERS)})"))
        for path in named_paths(value, command) for reason in [paths.refusal(path)] if reason]


# A Spark setting's name as Spark's launcher passes it on unchanged (``--conf KEY=VALUE``, split at the first "=").
SPARK_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Spark settings that choose the metastore, the warehouse or the master, and the setting to use instead.
_CONNECTION_KEYS = {
    "spark.master": "set spark.master (or SCHEMAFLOW_SPARK_MASTER) instead",
    "spark.hadoop.hive.metastore.uris": "set metastore.uri (or SCHEMAFLOW_METASTORE_URI) instead",
    "spark.hive.metastore.uris": "set metastore.uri (or SCHEMAFLOW_METASTORE_URI) instead",
    "spark.hadoop.metastore.thrift.uris": "set metastore.uri (or SCHEMAFLOW_METASTORE_URI) instead",
    "spark.sql.warehouse.dir": "set warehouse_dir (or SCHEMAFLOW_WAREHOUSE_DIR) instead",
    "spark.hadoop.hive.metastore.warehouse.dir": "set warehouse_dir (or SCHEMAFLOW_WAREHOUSE_DIR) instead",
    "spark.hive.metastore.warehouse.dir": "set warehouse_dir (or SCHEMAFLOW_WAREHOUSE_DIR) instead",
    "spark.hadoop.metastore.warehouse.dir": "set warehouse_dir (or SCHEMAFLOW_WAREHOUSE_DIR) instead",
    "spark.sql.catalogImplementation": "schemaflow always works through the Hive metastore: remove it",
    "spark.remote": "schemaflow runs its own Spark driver, not Spark Connect: remove it",
    "spark.api.mode": "schemaflow runs its own Spark driver, not Spark Connect: remove it",
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


def _function_problems(doc: Document, functions: dict[str, Any]) -> list[Problem]:
    """Declared functions: one declaration a function (the metastore's names are in lower case)."""
    first: dict[str, str] = {}
    problems = []
    for name in functions:
        if name.lower() in first:
            problems.append(Problem(doc.key(FUNCTIONS, name), (
                f"{name} and {first[name.lower()]} are one function (the metastore keeps its names in lower case): "
                "declare it once")))
        first.setdefault(name.lower(), name)
    return problems


# Which keys of a reader (``readers:``) each engine takes beside ``engine`` and what it reads (``_READS``), and which it
# needs.
_READER_KEYS = {"spark": ({"version"}, {"version"}), "hive": ({"version", "columns"}, set()),
                "trino": ({"version", "columns"}, set()), "iceberg-java": ({"version"}, set()),
                "pyiceberg": ({"version"}, set()), "delta": ({"reader", "features"}, {"reader"})}
_READS = {"databases", "tables"}
DELTA_READER_VERSIONS = 3  # the highest reader protocol version Delta has


def _reader_problems(doc: Document, index: int, reader: dict[str, Any]) -> list[Problem]:
    """A declared reader's keys as its engine takes them (the JSON Schema checked each key's shape)."""
    engine = reader["engine"]
    takes, needs = _READER_KEYS[engine]
    problems = [Problem(doc.key("readers", index, key), (
        f"a {engine} reader takes no {key}: it takes {', '.join(sorted(takes | _READS))}"))
        for key in reader if key not in takes | _READS | {"engine"}]
    problems += [Problem(doc.at("readers", index), f"a {engine} reader needs {key} (its release, such as \"3.5\": "
                         "what it reads depends on it)" if key == "version" else
                         f"a {engine} reader needs {key} (the highest reader protocol version it speaks, 1 to "
                         f"{DELTA_READER_VERSIONS})") for key in sorted(needs - set(reader))]
    if isinstance(reader.get("reader"), int) and reader["reader"] > DELTA_READER_VERSIONS:
        problems.append(Problem(doc.at("readers", index, "reader"), (
            f"Delta has reader protocol versions 1 to {DELTA_READER_VERSIONS}, not {reader['reader']}")))
    if reader.get("features") and reader.get("reader") != DELTA_READER_VERSIONS:
        problems.append(Problem(doc.key("readers", index, "features"), (
            f"only readers of protocol {DELTA_READER_VERSIONS} have table features: declare reader: "
            f"{DELTA_READER_VERSIONS}, or remove features")))
    return problems + _reads_problems(doc, index, reader)


def _reads_problems(doc: Document, index: int, reader: dict[str, Any]) -> list[Problem]:
    """What a reader reads, each database and table once: the metastore's names are in lower case, and a table of a
    database the reader names is read already."""
    problems = []
    databases = {str(name).lower() for name in reader.get("databases") or ()}
    for key in ("databases", "tables"):
        first: dict[str, str] = {}
        for position, name in enumerate(reader.get(key) or ()):
            lowered = str(name).lower()
            if lowered in first:
                problems.append(Problem(doc.at("readers", index, key, position), (
                    f"{name} and {first[lowered]} are one {key[:-1]} (the metastore keeps its names in lower case): "
                    "name it once")))
            elif key == "tables" and lowered.partition(".")[0] in databases:
                problems.append(Problem(doc.at("readers", index, key, position), (
                    f"{name} is a table of {lowered.partition('.')[0]}, which the reader's databases name: it reads "
                    "every table of it already; remove the table, or the database to read that table alone")))
            first.setdefault(lowered, str(name))
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
