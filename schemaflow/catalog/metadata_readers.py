"""How the live tables of a table kind with metadata of its own are recognised and read: one registry, from the
kind's name to its ``MetadataReader``.

A kind whose live schema is its own metadata's (``LiveSchema.OWN_METADATA``) keeps its columns where the
metastore does not: in a metadata file (Iceberg) or a log (Delta). Its catalogs register its tables in the
metastore in a way of their own (Iceberg's with the ``table_type`` parameter, and no Spark provider), and the
metastore's columns of such a table are a mirror at best, a placeholder at worst: read from there, a plan would
propose re-adding every column. So such a kind provides how a live table of it is recognised from the
metastore's parameters of it, and how it is read into a ``Table``; the live reader (``catalog.hive.thrift_data``)
asks this registry for both. A reader registers itself when its module is imported (Iceberg's in
``catalog.hive.thrift_data``); every read of the live state fails while a registered kind has none.

Whoever can register a table writes where its metadata is, so a reader reads it as hostile input: what it cannot
or will not read is ``Unreadable``, one line that names the kind of failure and never quotes the file, with
what to do, and the table is read as the metastore mirrors it (a plan refuses to change it). A command's reads
share one budget of bytes and time (``catalog.metadata_bounds``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemaflow.model import Table
from schemaflow.sql.table_kinds import TableKind, kinds


@dataclass(frozen=True)
class MetadataReader:
    """How the live tables of one kind with metadata of its own are recognised and read."""

    # Whether the metastore's parameters of a table say it is one, as the kind's catalogs register a table.
    recognises: Callable[[Mapping[str, str]], bool]
    # The table, from the metastore's entry of it (a Thrift ``Table`` as data, ``catalog.hive.thrift_data``) and where
    # its database is (the storage other than local files its metadata may be read from). A table whose metadata
    # cannot be read keeps what the entry says and the reason, in ``unreadable``: a plan refuses to change it.
    read: Callable[[Mapping[str, Any], Sequence[str | None]], Table]


# The parameter that names a table's kind where its catalogs say it that way (Iceberg's catalogs, Athena's Delta tables).
TABLE_TYPE = "table_type"

# What to do about metadata that an entry names and that is not the table's own, as another writer can register it.
OWN_METADATA = "see that its metastore entry names its own metadata file"


class Unreadable(Exception):
    """Why a table's own metadata was not read, in one line that quotes nothing of the file's content (it may be
    any file the entry names: a secret one too), and ``advice``: what to do about it."""

    def __init__(self, reason: str, advice: str = OWN_METADATA) -> None:
        super().__init__(reason)
        self.advice = advice

    def line(self) -> str:
        """The reason and what to do, as a plan shows them."""
        return f"{self}; {self.advice}"


_READERS: dict[str, MetadataReader] = {}  # the kind's name -> its reader


def register_metadata_reader(kind: str, reader: MetadataReader) -> None:
    """Register ``reader`` as how the live tables of the kind named ``kind`` are recognised and read; once a kind."""
    if kind in _READERS:
        raise ValueError(f"a metadata reader of the table kind {kind!r} is registered already")
    _READERS[kind] = reader


def metadata_reader(kind: TableKind) -> MetadataReader:
    """The reader of ``kind``'s own metadata; a ``LookupError`` when none is registered."""
    reader = _READERS.get(kind.name)
    if reader is None:
        raise LookupError(f"the table kind {kind.name!r} keeps its live schema in metadata of its own, and no reader "
                          "of it is registered (catalog.metadata_readers.register_metadata_reader)")
    return reader


def recognised_kind(parameters: Mapping[str, str]) -> TableKind | None:
    """The kind with metadata of its own whose reader recognises a live table by the metastore's ``parameters`` of
    it, or None."""
    return next((kind for kind in kinds() if kind.own_metadata and metadata_reader(kind).recognises(parameters)), None)
