"""The catalog backends by name: the one registry that maps the name a project's settings give
(``metastore.type``, default ``hive``) to the factory of its ``Backend`` (``catalog.backend``).

A backend registers itself when its module is imported (``@register_backend("name")``, as Alembic's
``implementation_for``); ``catalog.live`` imports the built-in ones, and a package installed beside schemaflow
names its module under the entry-point group ``schemaflow.backends`` (``name = "package.module"``), imported when a
project names it: code comes from what the operator installed, never from the project. A factory is called with the project and how
the command opens it (``Opening``), and connects nothing until asked: a command that reads no live state starts
nothing.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, TextIO, TypeVar

from schemaflow.catalog.backend import Backend
from schemaflow.errors import SchemaflowError
from schemaflow.project import Project

DEFAULT = "hive"
ENTRY_POINTS = "schemaflow.backends"


@dataclass(frozen=True)
class Opening:
    """How a command opens the catalog: where progress goes, whether it only reads (``direct``: a backend may read
    without starting what its writes need), and a connection the caller made already (tests), used as is."""

    progress: TextIO
    direct: bool = False
    connected: Any = None


BackendFactory = Callable[[Project, Opening], Backend]
F = TypeVar("F", bound=BackendFactory)
_REGISTRY: dict[str, BackendFactory] = {}


def register_backend(name: str) -> Callable[[F], F]:
    """Register the decorated factory (a class, say) as the backend ``name``; a name is registered once."""
    def register(factory: F) -> F:
        if name in _REGISTRY:
            raise ValueError(f"a catalog backend named {name!r} is registered already")
        _REGISTRY[name] = factory
        return factory
    return register


def backend_names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def open_backend(project: Project, opening: Opening) -> Backend:
    """The backend the project's settings name, opened (nothing is connected yet)."""
    name = project.settings.metastore_type
    if name not in _REGISTRY:
        for entry in entry_points(group=ENTRY_POINTS, name=name):
            entry.load()  # its module registers the backend
    factory = _REGISTRY.get(name)
    if factory is None:
        raise SchemaflowError(f"schemaflow.yaml: metastore.type {name!r} names no catalog backend; the backends are "
                              f"{', '.join(backend_names())} (default {DEFAULT})")
    return factory(project, opening)
