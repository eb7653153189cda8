"""Changes to the settings file, as steps of the plan a reviewer reads.

What ``apply`` does depends on ``schemaflow.yaml`` as much as on the schemas: its hooks, Spark's
settings, the metastore and warehouse, the databases and their attributes, what it leaves alone, the
invalidation mode, the targets. A pull request that changes them changes the apply, so the plan
between two git refs shows each changed setting as a step of its own, old -> new, after the changes
to objects. A setting that runs code (``code_settings``) carries a hazard that says so and names the
id by which the operator approves it; one that moves where apply connects carries one too. The files of
the project folder that such settings can run are part of them (``code_files``): a change to one of them
alone is a step too, with the hazard of each setting that runs code and its new id (when the settings
before and after both run code: a setting added or removed is a step of its own).

Settings take effect by being the ones apply reads: their steps run nothing but, after the rest of
the plan, a record on each managed database of the settings applied, but for those that say how to
reach it (``applied_part``): their digest and commit in ``schemaflow.settings``, and the settings
themselves in ``schemaflow.settings.1``, ``.2``, ..., each within the 4,000 characters of the
metastore's ``DATABASE_PARAMS.PARAM_VALUE``. So ``plan`` against the
metastore shows the settings changed since the last complete apply, old -> new, as ``plan --base``
shows those a pull request changes, with no need for the git history of the commit that applied
them (CI clones one or two commits deep). The plan also records the digest of the settings it was
made with, and ``apply --reviewed`` refuses to run with other settings than the reviewed ones.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any
from collections.abc import Mapping

from schemaflow.code_settings import (CODE_FILES, FUNCTIONS, HOOKS, CodeSetting, code_settings, declared_code,
                                     function_settings)
from schemaflow.model import SETTINGS_KEY, Catalog
from schemaflow.output_safety import one_line
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.steps import SetDatabaseParameters, Step

SETTINGS_FILE = "schemaflow.yaml"  # the object of a settings step

_MISSING = object()
_PART = 3_900  # characters of the settings' JSON a database parameter holds (DATABASE_PARAMS.PARAM_VALUE: 4,000)
# Settings that say where apply reads and writes.
_CONNECTIONS = {("metastore", "type"): "the catalog backend apply reads and writes through",
                ("metastore", "uri"): "the metastore apply reads and writes",
                ("metastore", "warehouse"): "the warehouse of the catalog apply reads and writes",
                ("warehouse_dir",): "where new databases and tables store their data",
                ("spark", "master"): "the Spark master apply runs on"}


def settings_digest(declared: Mapping[str, Any]) -> str:
    """A digest of settings as written (``Settings.declared``), which a plan records and apply checks."""
    text = json.dumps(declared, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def settings_record(declared: Mapping[str, Any], commit: str | None) -> dict[str, str]:
    """The database parameters that record the settings applied: their digest and commit, and the settings
    as JSON in parts that each fit the metastore's column."""
    # ASCII, so a character is a byte and a UTF-16 unit; "$" escaped, so that no user text reads as
    # schemaflow's own ${applied_at}, which apply fills in its parameters.
    text = json.dumps(declared, sort_keys=True, default=str).replace("$", "\\u0024")
    parts = [text[i:i + _PART] for i in range(0, len(text), _PART)]
    record = {SETTINGS_KEY: json.dumps({"commit": commit, "digest": settings_digest(declared), "parts": len(parts)},
                                       sort_keys=True)}
    return record | {f"{SETTINGS_KEY}.{number}": part for number, part in enumerate(parts, 1)}


def applied_part(declared: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a metastore records as applied: all but how this checkout reaches it (the metastore, the
    warehouse, the master, the target's too), which differs from checkout to checkout and which the
    environment overrides; between git refs, a change of those is shown, with a hazard."""
    def kept(data: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        result = {}
        for key, value in data.items():
            if any((path + (key,))[-len(tail):] == tail for tail in _CONNECTIONS):
                continue
            if isinstance(value, Mapping) and value:
                value = kept(value, path + (key,))
                if not value:  # it held only how to connect (metastore: {uri: ...})
                    continue
            result[key] = value
        return result
    return kept(declared, ())


@dataclass(frozen=True)
class SettingsChange:
    """What a plan shows and records of the settings: it is made with ``declared`` (whose digest it carries), has a
    step last for each setting of ``after`` that differs from ``before``, the last of which records ``after`` as
    applied on each of its databases; with ``record`` and no such step, its last step records them all the same
    (bookkeeping, as a stamp is). ``warnings`` go beside the plan's."""

    declared: Mapping[str, Any]
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    record: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        return settings_digest(self.declared)

    def steps(self, steps: tuple[Step, ...], commit: str | None, databases: tuple[str, ...]) -> tuple[Step, ...]:
        """``steps`` (a plan's, made from ``commit`` on ``databases``) with this change's steps and record."""
        changed = settings_steps(self.before, self.after)
        record = tuple(SetDatabaseParameters(database, settings_record(self.after, commit)) for database in databases)
        if changed:
            return steps + changed[:-1] + (replace(changed[-1], settings_record=record),)
        if not self.record or not steps:
            return steps
        return steps[:-1] + (replace(steps[-1], settings_record=steps[-1].settings_record + record),)


def since_applied(declared: Mapping[str, Any], live: Catalog, databases: tuple[str, ...]) -> SettingsChange:
    """What a plan against ``live`` shows and records of the settings ``declared``: each setting changed since those
    the live ``databases`` record as last applied (their ``applied_part``). Where none are recorded yet (a new
    warehouse, or one adopted), there is nothing to compare with: the plan records them with its last step, and
    shows them from then on."""
    applied = applied_part(declared)
    last = recorded(live, databases)
    if last is not None and last.digest == settings_digest(applied):
        return SettingsChange(declared, applied, applied)
    if last is None:
        return SettingsChange(declared, applied, applied, record=True)
    warning: tuple[str, ...] = ()
    if last.settings is None:
        warning = (f"the settings last applied here (from commit {last.commit or 'unknown'}) are not recorded in full: "
                   "each setting is shown as new",)
    # Nothing to show against what is known (no setting step): recorded all the same.
    return SettingsChange(declared, last.settings or {}, applied, record=True, warnings=warning)


@dataclass(frozen=True)
class Recorded:
    """The settings last applied, as a managed database records them (``settings``: None if unreadable)."""

    digest: str
    commit: str | None
    settings: Mapping[str, Any] | None


def recorded(live: Catalog, databases: tuple[str, ...]) -> Recorded | None:
    """The settings last applied, as the first of ``databases`` that records them says (a database the
    plan adds has none yet); None where none does."""
    for database in sorted(databases):
        details = live.database_details.get(database)
        parameters = details.properties if details else {}
        try:
            head = json.loads(parameters[SETTINGS_KEY])
            digest, commit, count = str(head["digest"]), head.get("commit"), int(head.get("parts", 0))
        except (KeyError, ValueError, TypeError):  # none, or not schemaflow's: as if none were recorded there
            continue
        try:
            settings = json.loads("".join(parameters[f"{SETTINGS_KEY}.{n}"] for n in range(1, count + 1)))
        except (KeyError, ValueError):
            settings = None
        if settings is not None and settings_digest(settings) != digest:
            settings = None  # parts of another record
        return Recorded(digest, commit, settings)
    return None


def settings_steps(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[Step, ...]:
    """A step for each setting (a leaf of the file's mappings; a list is one setting) that differs, in path order;
    and one for each file code can run that differs, where code runs before and after."""
    old, new = _leaves(before), _leaves(after)
    if not (declared_code(before) and declared_code(after)):
        old, new = ({path: value for path, value in leaves.items() if path[0] != CODE_FILES} for leaves in (old, new))
    files = after.get(CODE_FILES) or {}
    return tuple(_step(path, old.get(path, _MISSING), new.get(path, _MISSING), files, after)
                 for path in sorted(old.keys() | new.keys()) if old.get(path, _MISSING) != new.get(path, _MISSING))


def _leaves(data: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Each setting of ``data`` by its path: a leaf of its mappings, but that a list, and a declared function (its
    class and resources, which one id covers), are one setting each."""
    if isinstance(data, Mapping) and data and not (len(path) == 2 and path[0] == FUNCTIONS):
        return {leaf: value for key, item in data.items() for leaf, value in _leaves(item, path + (str(key),)).items()}
    return {path: data} if path else {}


def _step(path: tuple[str, ...], old: Any, new: Any, files: Mapping[str, str], after: Mapping[str, Any]) -> Step:
    name = _name(path)
    verb = "set" if old is _MISSING else "remove" if new is _MISSING else "change"
    summary = f"{verb} {name} in {SETTINGS_FILE}"
    if path[0] == CODE_FILES:  # not a setting written, but a file code can run
        summary = (f"{'add' if verb == 'set' else verb} {one_line(path[1])}, a file of the project that code in "
                   f"{SETTINGS_FILE} can run")
    return Step(kind=StepKind.CHANGE_SETTINGS, object=SETTINGS_FILE, object_type=ObjectType.SETTINGS,
                summary=summary, body=(), hazards=_hazards(path, old, new, files, after),
                values=(f"{name}: {_shown(old)} -> {_shown(new)}",))


def _hazards(path: tuple[str, ...], old: Any, new: Any, files: Mapping[str, str],
             after: Mapping[str, Any]) -> tuple[str, ...]:
    """What the change lets apply do that a reviewer must weigh: run code, or connect elsewhere."""
    code: tuple[CodeSetting, ...] = ()
    if path[-1] == HOOKS and isinstance(new, list):
        code = code_settings([str(c) for c in new if not isinstance(old, list) or c not in old], {}, files)
    elif path[-3:-1] == ("spark", "conf") and new is not _MISSING:
        code = code_settings((), {path[-1]: str(new)}, files)
    elif path[0] == FUNCTIONS and len(path) == 2 and isinstance(new, Mapping):
        code = function_settings({path[1]: new}, files)
    elif path[0] == CODE_FILES:
        code = declared_code(after, files)
    hazards = [f"runs code in the apply job: {setting.describe()}; apply refuses it until the operator approves "
               f"id {setting.id} (SCHEMAFLOW_APPROVED_CODE or --approve-code)" for setting in code]
    for tail, what in _CONNECTIONS.items():
        if path[-len(tail):] == tail and old is not _MISSING:  # moved, not set where there was none
            hazards.append(f"changes {what} (the operator's SCHEMAFLOW_* variables, where set, still win)")
    if path[-3:-1] == ("metastore", "moving_from") and new is not _MISSING:
        hazards.append("forgets, in the catalog moved from, the entries of the objects moved (destructive steps, with "
                       "--allow-destructive)" if path[-1] == "forget" and new is True else
                       "changes the catalog the project moves from: plan reads it, and registers its Iceberg tables in "
                       "the project's catalog, where a writer still using the old entries forks those tables (see "
                       "Moving between catalogs)")
    if path[-2:] == ("metastore", "guard") and new == "lock":
        hazards.append("guards each write with the metastore's table lock instead of its compare-and-swap: a writer "
                       "that alters a table without taking the lock (a plain Spark ALTER TABLE) is not seen")
    return tuple(hazards)


def _name(path: tuple[str, ...]) -> str:
    """``targets.prod.spark.conf[spark.jars]``: a part that holds a dot is bracketed; each shown escaped (a key a
    metastore record holds, or a file's name, is anyone's text)."""
    return "".join(f"[{one_line(part)}]" if "." in part else ("." if i else "") + one_line(part)
                   for i, part in enumerate(path))


def _shown(value: Any) -> str:
    return "(not set)" if value is _MISSING else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
