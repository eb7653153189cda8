"""A schemaflow project on disk: where its files are, and its settings.

A project is a directory with ``schemas/`` (one table or view per YAML file), ``migrations/``
(ordered explicit changes) and an optional ``schemaflow.yaml`` of settings. Every setting has a
default that runs on a laptop: an embedded Derby metastore and a warehouse under ``.schemaflow/``.
Environment variables override the file, so CI can point the same project at another metastore.
The settings that run code (hooks, Spark settings schemaflow does not know to be safe, the functions views may
call) run only as the
operator approves them, from the environment or the command line, never from the file (``code_settings``).

A project may name targets (dev, staging, prod: ``targets:``), each overriding the connection
settings and mapping the project's database names to the target's (``retail`` -> ``dev_retail``).
The target is chosen by ``--target``, else ``SCHEMAFLOW_TARGET``, else the file's ``target:``.
With none chosen, the project's own names and settings are used, for what needs no metastore
(validate, plan between git refs); a project that names targets is never connected to a
metastore without one (see ``workflow.Live``).
"""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from schemaflow.code_settings import (APPROVAL_VARIABLE, CODE_FILES, FUNCTIONS, CodeSetting, approvals, code_settings,
                                      function_settings, operator_paths)
from schemaflow.errors import SchemaflowError
from schemaflow.model import Database, Invalidation
from schemaflow.spark_version import SparkVersion, parse_release, spark_version
from schemaflow.spec.layout import STATE_DIR
from schemaflow.sql.code_calls import Allowed
from schemaflow.spec.settings import SETTINGS_FILE, read_settings
from schemaflow.spec.source import Directory, ProjectFiles

ENV_METASTORE_URI = "SCHEMAFLOW_METASTORE_URI"
ENV_WAREHOUSE_DIR = "SCHEMAFLOW_WAREHOUSE_DIR"
ENV_SPARK_MASTER = "SCHEMAFLOW_SPARK_MASTER"
ENV_TARGET = "SCHEMAFLOW_TARGET"
ENV_LOCAL_SERVER = "SCHEMAFLOW_LOCAL_SERVER"
LOCAL_SERVER_MINUTES = 15  # how long the embedded metastore's local server stays unused (catalog.hive.local_server)
# thrift://host:port, several separated by commas (Hive's hive.metastore.uris).
_METASTORE_URIS = re.compile(r"thrift://[A-Za-z0-9.\-]+(?::\d{1,5})?(?:,\s*thrift://[A-Za-z0-9.\-]+(?::\d{1,5})?)*")


# local, local[4], local[*], local[4,2] (its retries after the comma)
_LOCAL_MASTER = re.compile(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?")


@dataclass(frozen=True)
class Settings:
    metastore_type: str = "hive"              # the catalog backend (catalog.backends)
    metastore_uri: str | None = None          # None: embedded Derby under .schemaflow/
    metastore_warehouse: str | None = None    # metastore.warehouse: the warehouse a backend's catalog serves
    metastore_options: Mapping[str, Any] = field(default_factory=dict)  # metastore.options: the backend's own
    moving_from: Mapping[str, Any] | None = None  # metastore.moving_from: the catalog the project moves from (plan.moving)
    lock_guards: bool = False                 # metastore.guard: lock (the table lock, not compare-and-swap)
    local_server_minutes: float = LOCAL_SERVER_MINUTES  # metastore.local_server: 0, no local server
    warehouse_dir: str = ""                   # "": the metastore server's own (embedded: .schemaflow/warehouse)
    spark_master: str = "local[2]"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    spark_release: SparkVersion | None = None  # declared (spark.release); None: the installed pyspark's
    # readers: as declared, each checked (``plan.readers`` makes them Readers); None: none declared
    readers: tuple[Mapping[str, Any], ...] | None = None
    databases: tuple[str, ...] = ()           # empty: the databases named in schemas/
    database_details: Mapping[str, Database] = field(default_factory=dict)  # declared comment, location, properties
    derby_dir: str = ""                       # where the embedded metastore lives
    invalidation: Invalidation = Invalidation.STRICT  # what a change that breaks a view does
    exclude: tuple[str, ...] = ()             # globs on db.name of objects schemaflow leaves alone (see scope)
    manage_undeclared: frozenset[str] = frozenset()  # table kinds whose undeclared tables it manages (see scope)
    after_apply: tuple[str, ...] = ()         # shell commands run after an apply (see apply.after)
    # the functions views call without approval each (db.name -> class and resources: sql.code_calls)
    functions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    target: str | None = None                 # the chosen target's name; None: none chosen
    database_names: Mapping[str, str] = field(default_factory=dict)  # project database -> its name on the target
    targets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # every target's database names
    declared: Mapping[str, Any] = field(default_factory=dict)  # schemaflow.yaml's data as written: what reviews see
    approved_code: frozenset[str] = frozenset()  # ids of the code-running settings the operator approved
    root: str = ""  # the project's folder, where relative paths in settings are read ("": the current folder)

    @property
    def code(self) -> tuple[CodeSetting, ...]:
        """The hooks, Spark settings and declared functions that run code with these settings (see ``code_settings``)."""
        return (code_settings(self.after_apply, self.spark_conf, self.code_files)
                + function_settings(self.functions, self.code_files))

    @property
    def allowed_calls(self) -> Allowed:
        """What the project's views call freely: the built-ins of its Spark release and the functions it declares."""
        return Allowed(self.release, frozenset(self.functions))

    @property
    def checked_calls(self) -> Allowed:
        """What Spark may resolve of the views' calls before apply's check of the code: ``allowed_calls`` but the
        declared functions the operator has not approved."""
        declarations = zip(self.functions, function_settings(self.functions, self.code_files), strict=True)
        return Allowed(self.release,
                       frozenset(name for name, setting in declarations if setting.id in self.approved_code))

    @property
    def spark_code(self) -> tuple[CodeSetting, ...]:
        """The Spark settings among ``code``: those that run code as Spark starts."""
        return code_settings((), self.spark_conf, self.code_files)

    @property
    def release(self) -> SparkVersion:
        """The Spark release plans are made for: the installed pyspark's, else the declared one
        (``spark_version``)."""
        return spark_version(self.spark_release)

    @property
    def spark_cores(self) -> int | None:
        """The cores the configured master runs Spark's tasks on, where the settings say: ``local[N]``, ``local[*]``
        (this machine's), ``spark.cores.max``, or executors times their cores; None where they do not."""
        local = _LOCAL_MASTER.fullmatch(self.spark_master.strip())
        if local:
            threads = local.group(1) or "1"
            return (os.cpu_count() or 1) if threads == "*" else int(threads)
        conf = self.spark_conf
        if conf.get("spark.cores.max", "").isdigit():
            return int(conf["spark.cores.max"])
        executors, cores = conf.get("spark.executor.instances", ""), conf.get("spark.executor.cores", "")
        return int(executors) * int(cores) if executors.isdigit() and cores.isdigit() else None

    @property
    def code_files(self) -> Mapping[str, str]:
        """The project folder's files that settings which run code can run, with the id of each one's content."""
        return self.declared.get(CODE_FILES) or {}


@dataclass(frozen=True)
class Project:
    root: Path
    settings: Settings

    @property
    def schemas_dir(self) -> Path:
        return self.root / "schemas"


def find_root(start: Path) -> Path:
    """The project a command run in ``start`` works on, as git finds ``.git``: the nearest of ``start`` and
    the folders above it that holds schemaflow.yaml or schemas/; ``start`` itself when none does."""
    for folder in (start, *start.parents):
        if (folder / SETTINGS_FILE).is_file() or (folder / "schemas").is_dir():
            return folder
    return start


def load_project(root: str | Path, env: Mapping[str, str] | None = None, target: str | None = None,
                 approve_code: tuple[str, ...] = (), operator_folders: bool = True,
                 files: ProjectFiles | None = None) -> Project:
    """Read the project at ``root``: its settings file (if any), the chosen target's, then the environment's.

    ``approve_code``: ids of code-running settings approved on the command line, beside the environment's.
    ``operator_folders``: False where the folders the operator supplies code from (``SCHEMAFLOW_CODE_PATHS``) are not
    known, as in a pull request's ``plan --base``, whose job is not the operator's: settings that run code may then
    name absolute paths outside the repository's checkout (apply, which knows them, checks them).
    ``files``: where the settings file is read from (default: the folder ``root``; a commit's files give the
    project's settings at that commit, ``gitsource.commit_files``).
    """
    root = Path(root).resolve()
    env = os.environ if env is None else env
    if not (root / "schemas").is_dir():
        raise SchemaflowError(f"{root}: no schemas/ directory here; run in a schemaflow project or pass --project DIR")
    project_wide = read_settings(Directory(root) if files is None else files,
                                 operator_paths(env) if operator_folders else None)
    chosen = _chosen_target(project_wide, target or env.get(ENV_TARGET))
    raw = _on_target(project_wide, chosen)
    state = root / STATE_DIR
    metastore = raw.get("metastore") or {}
    spark = raw.get("spark") or {}
    metastore_uri = _metastore_variable(env) or metastore.get("uri")
    warehouse_dir = env.get(ENV_WAREHOUSE_DIR) or raw.get("warehouse_dir")
    if not warehouse_dir and not metastore_uri:  # a metastore server has a warehouse of its own
        warehouse_dir = str(state / "warehouse")
    settings = Settings(
        metastore_type=metastore.get("type") or "hive",
        metastore_uri=metastore_uri,
        metastore_warehouse=metastore.get("warehouse"),
        metastore_options=dict(metastore.get("options") or {}),
        moving_from=dict(metastore["moving_from"]) if isinstance(metastore.get("moving_from"), Mapping) else None,
        lock_guards=metastore.get("guard") == "lock",
        local_server_minutes=_local_server(env, metastore.get("local_server")),
        warehouse_dir=_absolute(root, warehouse_dir) if warehouse_dir else "",
        spark_master=env.get(ENV_SPARK_MASTER) or spark.get("master") or "local[2]",
        spark_conf={str(k): str(v) for k, v in sorted((spark.get("conf") or {}).items())},
        spark_release=parse_release(spark["release"]) if spark.get("release") else None,
        readers=tuple(raw["readers"]) if raw.get("readers") is not None else None,
        databases=managed_databases(raw),
        database_details=declared_databases(raw),
        derby_dir=str(state),
        invalidation=Invalidation(raw.get("invalidation") or Invalidation.STRICT),
        exclude=tuple(str(pattern).lower() for pattern in raw.get("exclude") or ()),
        manage_undeclared=frozenset(str(kind) for kind in raw.get("manage_undeclared") or ()),
        after_apply=tuple(raw.get("after_apply") or ()),
        functions={name.lower(): declared for name, declared in (project_wide.get(FUNCTIONS) or {}).items()},
        target=chosen,
        database_names=_names(raw),
        targets={name: _names(target or {}) for name, target in sorted((project_wide.get("targets") or {}).items())},
        declared=project_wide,
        approved_code=approvals(env.get(APPROVAL_VARIABLE), approve_code),
        root=str(root),
    )
    return Project(root=root, settings=settings)


def _metastore_variable(env: Mapping[str, str]) -> str | None:
    """``SCHEMAFLOW_METASTORE_URI``, checked: it goes into Spark's and Hive's settings as it is."""
    value = env.get(ENV_METASTORE_URI)
    if value and not (_METASTORE_URIS.fullmatch(value)
                      and all(int(port) <= 65535 for port in re.findall(r":(\d+)", value))):
        # Not repeated in the message: it is often a secret.
        raise SchemaflowError(f"{ENV_METASTORE_URI} is not a metastore address: write thrift://host:port (several "
                              "separated by commas), with no spaces, user or path")
    return value


def _local_server(env: Mapping[str, str], declared: float | None) -> float:
    """The minutes the embedded metastore's local server stays unused: ``SCHEMAFLOW_LOCAL_SERVER``, else
    ``metastore.local_server``, else the default; 0 for none."""
    value = env.get(ENV_LOCAL_SERVER)
    if value is None:
        return LOCAL_SERVER_MINUTES if declared is None else declared
    if not re.fullmatch(r"\d{1,6}(\.\d{1,6})?", value):
        raise SchemaflowError(f"{ENV_LOCAL_SERVER} is not a number of minutes: write how long the local metastore "
                              "server stays unused, such as 15 or 0.5 (0: none)")
    return float(value)


def _chosen_target(settings: Mapping[str, Any], named: str | None) -> str | None:
    """The target to use: the one named, else the file's default; None for a project without targets."""
    targets = settings.get("targets") or {}
    named = named or settings.get("target")
    if not named:
        return None
    if not targets:
        raise SchemaflowError(f"target '{named}' is not defined: schemaflow.yaml has no targets; "
                              "add it under 'targets:', or run without --target and SCHEMAFLOW_TARGET")
    choices = ", ".join(sorted(targets))
    if named not in targets:
        near = difflib.get_close_matches(named, sorted(targets), n=1)
        hint = f"did you mean '{near[0]}'? " if near else ""
        raise SchemaflowError(f"unknown target '{named}': {hint}schemaflow.yaml defines {choices}")
    return named


def no_target_chosen(settings: Settings) -> str | None:
    """Why the metastore may not be reached with these settings: targets are defined and none was chosen."""
    if settings.targets and settings.target is None:
        return (f"schemaflow.yaml defines targets ({', '.join(settings.targets)}) and none was chosen: pass "
                f"--target NAME, set {ENV_TARGET}, or name a default with 'target:' in schemaflow.yaml")
    return None


def _names(settings: Mapping[str, Any]) -> dict[str, str]:
    """A target's ``database_names``, lower-case, as Hive stores names."""
    return {str(k).lower(): str(v).lower() for k, v in sorted((settings.get("database_names") or {}).items())}


def _on_target(settings: Mapping[str, Any], target: str | None) -> dict[str, Any]:
    """The settings with the target's own laid over them (its Spark settings over the project's, key by key)."""
    merged = dict(settings)
    if target is None:
        return merged
    overrides = settings["targets"][target] or {}
    for key, value in overrides.items():
        if key == "spark":
            spark = settings.get("spark") or {}
            value = {**spark, **value, "conf": {**(spark.get("conf") or {}), **(value.get("conf") or {})}}
        merged[key] = value
    return merged


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
