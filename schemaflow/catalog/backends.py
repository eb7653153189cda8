"""The catalog backends by name: the one registry that maps the name a project's settings give
(``metastore.type``, default ``hive``) to the factory of its ``Backend`` (``catalog.backend``), what the backend can
hold (its ``Capabilities``) and the JSON Schema of its ``metastore:`` settings.

A backend registers itself when its module is imported (``@register_backend("name", capabilities=...)``, as Alembic's
``implementation_for``). The built-in ones are named in ``BUILT_IN`` and imported only when a project names them, so a
command that needs none (or another) loads nothing of theirs; a package installed beside schemaflow names its module
under the entry-point group ``schemaflow.backends`` (``name = "package.module"``), imported when a project names it:
code comes from what the operator installed, never from the project. A module that cannot be imported is one line
naming the backend, the module and the error, not a traceback. A factory is called with the project and how the
command opens it (``Opening``), and connects nothing until asked: a command that reads no live state starts nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, TextIO, TypeVar

from schemaflow.capabilities import HIVE_METASTORE, Capabilities
from schemaflow.catalog.backend import Backend
from schemaflow.errors import Problem, SchemaflowError
from schemaflow.project import Project
from schemaflow.spec.layout import SETTINGS_FILE
from schemaflow.spec.schema import check_against
from schemaflow.spec.source import Directory
from schemaflow.spec.yamlpos import load_yaml

DEFAULT = "hive"
ENTRY_POINTS = "schemaflow.backends"
# The backends in the package, by name: the module that registers each, imported when a project names it.
BUILT_IN = {"hive": "schemaflow.catalog.hive.backend", "iceberg_rest": "schemaflow.catalog.rest.backend",
            "glue": "schemaflow.catalog.glue.backend"}


@dataclass(frozen=True)
class Opening:
    """How a command opens the catalog: where progress goes, whether it only reads (``direct``: a backend may read
    without starting what its writes need), and a connection the caller made already (tests), used as is."""

    progress: TextIO
    direct: bool = False
    connected: Any = None


BackendFactory = Callable[[Project, Opening], Backend]
F = TypeVar("F", bound=BackendFactory)


@dataclass(frozen=True)
class BackendInfo:
    """A registered backend: its factory, what it can hold, and the JSON Schema of its ``metastore:`` settings (None:
    it takes no ``options``)."""

    factory: BackendFactory
    capabilities: Capabilities = field(default_factory=Capabilities)
    options_schema: Mapping[str, Any] | None = None


_REGISTRY: dict[str, BackendInfo] = {}


def register_backend(name: str, *, capabilities: Capabilities = HIVE_METASTORE,
                     options_schema: Mapping[str, Any] | None = None) -> Callable[[F], F]:
    """Register the decorated factory (a class, say) as the backend ``name``, with its ``capabilities`` and the JSON
    Schema its ``metastore:`` settings are checked against (``uri``, ``warehouse``, ``guard``, ``local_server`` and
    ``options``: allow-list the keys of ``options``); a name is registered once."""
    def register(factory: F) -> F:
        if name in _REGISTRY:
            raise ValueError(f"a catalog backend named {name!r} is registered already")
        _REGISTRY[name] = BackendInfo(factory, capabilities, options_schema)
        return factory
    return register


def backend_names() -> tuple[str, ...]:
    """The names a project may give: built in, registered, or installed under the entry points (none is imported)."""
    installed = {entry.name for entry in entry_points(group=ENTRY_POINTS)}
    return tuple(sorted(set(BUILT_IN) | set(_REGISTRY) | installed))


def backend_info(name: str) -> BackendInfo:
    """The backend ``name``, its module imported first if need be; ``SchemaflowError`` if none is, or its module
    cannot be imported."""
    if name not in _REGISTRY:
        if name in BUILT_IN:
            _load(name, BUILT_IN[name], lambda: import_module(BUILT_IN[name]))
        for entry in entry_points(group=ENTRY_POINTS, name=name):
            if name not in _REGISTRY:
                _load(name, entry.value, entry.load)  # its module registers the backend
    info = _REGISTRY.get(name)
    if info is None:
        raise SchemaflowError(f"schemaflow.yaml: metastore.type {name!r} names no catalog backend; the backends are "
                              f"{', '.join(backend_names())} (default {DEFAULT})")
    return info


def backend_capabilities(name: str) -> Capabilities:
    """What the backend ``name`` can hold and how it guards its writes."""
    return backend_info(name).capabilities


def _load(name: str, module: str, load: Callable[[], object]) -> None:
    """Import ``module``, which registers the backend ``name``: a failure is one line, the error's first."""
    try:
        load()
    except Exception as error:  # noqa: BLE001  (whatever the module raises: said in one line, not a traceback)
        said = next(iter(str(error).splitlines()), "")
        raise SchemaflowError(f"catalog backend {name!r} (module {module}) could not be imported: "
                              f"{type(error).__name__}: {said}") from None


def settings_problems(project: Project) -> list[Problem]:
    """The problems of each ``metastore:`` block of the project's settings file (its targets' too) against the JSON
    Schema of the backend it names, each at its key or value; a backend whose schema lists no ``options`` takes none."""
    file = Directory(project.root).open(SETTINGS_FILE)
    if file is None:
        return []
    doc = load_yaml(file, file.name)
    data = doc.data if isinstance(doc.data, dict) else {}
    targets = data.get("targets") or {}
    blocks = [((), data)] + [(("targets", name), target) for name, target in sorted(targets.items())]
    problems = []
    for where, settings in blocks:
        block = (settings or {}).get("metastore")
        if not isinstance(block, dict):
            continue
        moving = block.get("moving_from")
        # The catalog moved from is checked against its own backend's schema, without the key only it takes.
        problems += _block_problems(doc, data, (*where, "metastore"), {k: v for k, v in block.items() if k != "moving_from"})
        if isinstance(moving, dict) and isinstance(moving.get("type"), str):
            problems += _block_problems(doc, data, (*where, "metastore", "moving_from"),
                                        {k: v for k, v in moving.items() if k != "forget"})
    return problems


def _block_problems(doc: Any, data: Mapping[str, Any], path: tuple[str, ...], block: Mapping[str, Any]) -> list[Problem]:
    """The problems of the catalog block ``block`` at ``path`` of the settings file ``data`` against the schema of the
    backend it names, each at its key or value."""
    name = block.get("type") or DEFAULT
    schema: Mapping[str, Any] = backend_info(name).options_schema or {}
    problems = []
    if "options" not in schema.get("properties", {}):
        problems += [Problem(doc.key(*path, "options", key), f"unknown key '{key}': metastore.type {name} takes no options")
                     for key in sorted(block.get("options") or {})]
        block = {k: v for k, v in block.items() if k != "options"}
    checked = _replaced(data, path, block)
    for part in reversed(path):  # the schema of the whole file, checking only this block
        schema = {"type": "object", "properties": {part: schema}}
    return problems + check_against(doc, checked, schema)


def _replaced(data: Mapping[str, Any], path: tuple[str, ...], block: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the mapping at ``path`` made ``block``."""
    if len(path) == 1:
        return {**data, path[0]: block}
    return {**data, path[0]: _replaced(data[path[0]], path[1:], block)}


def open_backend(project: Project, opening: Opening) -> Backend:
    """The backend the project's settings name, opened (nothing is connected yet)."""
    return backend_info(project.settings.metastore_type).factory(project, opening)


def source_project(project: Project) -> Project | None:
    """The project as it stood on the catalog it moves from (``metastore.moving_from``, see ``plan.moving``), whose
    backend reads that catalog; None where it moves from none. An embedded Hive metastore moved from keeps its
    warehouse under the project's state folder, as before the move."""
    moving = project.settings.moving_from
    if moving is None:
        return None
    uri = moving.get("uri")
    warehouse_dir = project.settings.warehouse_dir or ("" if uri else str(Path(project.settings.derby_dir) / "warehouse"))
    return replace(project, settings=replace(
        project.settings, metastore_type=str(moving["type"]), metastore_uri=uri, metastore_warehouse=moving.get("warehouse"),
        metastore_options=dict(moving.get("options") or {}), lock_guards=False, moving_from=None,
        warehouse_dir=warehouse_dir))
