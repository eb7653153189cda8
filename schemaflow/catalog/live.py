"""The live catalog of a project, served by the backend its settings name (``catalog.backends``).

A command asks ``Live`` and never names a backend: ``reader`` for what a plan is made against (a
``CatalogReader``), ``writer()`` for where apply runs (a ``CatalogWriter``), and the questions only
some backends can answer (the columns of each partition, a view's SQL as the engine analyses it),
which answer "not known" where the backend cannot. The built-in backend is the Hive metastore
(``catalog.hive.backend``), imported when a project names it (``catalog.backends``).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from schemaflow.catalog.backend import Backend, CatalogReader, CatalogWriter, PlanHints, StoredFunction
from schemaflow.catalog.backends import Opening, open_backend, source_project
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.project import Project

if TYPE_CHECKING:
    from schemaflow.catalog.history import Applied


@dataclass
class Live:
    """The live catalog of ``project``, connected on first use; ``connected``: a connection the caller made (tests).
    With ``direct`` (the commands that only read: plan, drift, snapshot), the backend may read without starting what
    its writes need. ``source_connected``: a connection to the catalog the project moves from, made by the caller."""

    project: Project
    connected: Any = None
    progress: TextIO = sys.stderr
    direct: bool = False
    source_connected: Any = None
    backend: Backend = field(init=False, repr=False)
    _source: Backend | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.backend = open_backend(self.project, Opening(self.progress, self.direct, self.connected))

    @property
    def reader(self) -> CatalogReader:
        return self.backend.reader

    @property
    def source(self) -> Backend | None:
        """The catalog the project moves from (``metastore.moving_from``), opened on first use; None: it moves from
        none. Plan only reads it; apply writes it only for the steps that forget its entries (``plan.moving``)."""
        moved_from = source_project(self.project)
        if moved_from is None:
            return None
        if self._source is None:
            self._source = open_backend(moved_from, Opening(self.progress, self.direct, self.source_connected))
        return self._source

    def source_writer(self) -> CatalogWriter:
        """Where the steps that forget entries of the catalog moved from run."""
        source = self.source
        writer = source.writer() if source is not None else None
        if writer is None:
            raise SchemaflowError("the plan forgets entries of the catalog the project moves from, which "
                                  + ("schemaflow.yaml names no more (metastore.moving_from)" if source is None else
                                     f"schemaflow writes not ({source.where()})") + ": nothing was applied")
        return writer

    def read_ahead(self, databases: tuple[str, ...]) -> None:
        self.backend.read_ahead(databases)

    def read(self, databases: tuple[str, ...]) -> Catalog:
        return self.backend.read(databases)

    def writer(self) -> CatalogWriter:
        """Where apply runs; a backend that only reads refuses, before anything is planned to run."""
        writer = self.backend.writer()
        if writer is None:
            raise SchemaflowError(f"{self.backend.where()} is read by schemaflow and not written "
                                  f"(metastore.type {self.project.settings.metastore_type}): nothing was applied")
        return writer

    def stale_partitions(self, key: str, exact: bool = False) -> int | None:
        return self.backend.stale_partitions(key, exact)

    def view_problems(self, desired: Catalog, views: Iterable[str]) -> dict[str, str]:
        """Why the engine refuses the SQL of each of ``views``; none where the backend cannot check."""
        return self.backend.view_problems(desired, views) or {}

    def functions(self, names: Iterable[str]) -> dict[str, StoredFunction | None] | None:
        return self.backend.functions(names)

    def hints(self) -> PlanHints | None:
        return self.backend.hints()

    def history(self, databases: tuple[str, ...], objects: Sequence[str] = ()) -> list[Applied]:
        """What schemaflow applied in ``databases`` (see ``catalog.history``), read by ``reader``."""
        from schemaflow.catalog.history import read_history

        return read_history(self.reader, databases, objects)
