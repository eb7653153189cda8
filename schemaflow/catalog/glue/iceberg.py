"""Iceberg tables in a Glue Data Catalog: their entries as Iceberg's Glue catalogs write them, and the commit each
write of one makes, guarded by the entry's ``VersionId``.

Glue holds an Iceberg table as an external table whose ``table_type`` parameter is ``ICEBERG`` and whose
``metadata_location`` names its current metadata file; the storage descriptor mirrors its columns (with their field
ids) and the parameters its properties. The entry is pyiceberg's Glue catalog's own (``_construct_table_input``, of
the pinned pyiceberg release), so pyiceberg, Spark with Iceberg's Glue catalog, Athena and EMR read it as one of
theirs; schemaflow adds the table's comment as ``Description`` (as for its other tables) and takes the properties a
commit removes out of the parameters (pyiceberg leaves them there).

A commit (``GlueWriter`` runs it) is made on one ``GetTable``:

1. the entry, at its ``VersionId``, and the metadata file it names (``catalog.iceberg_metadata``: bounded, on the
   database's storage or the warehouse's);
2. what the plan requires of that metadata and the stamp it expects (``iceberg_updates.check_state``), else
   ``ConcurrentChange``;
3. the next metadata, made by pyiceberg from the neutral updates (``catalog.iceberg_updates``) and written as the
   next metadata file beside the current one (``prepare``);
4. ``UpdateTable`` of the entry naming it, ``previous_metadata_location`` the file read, at the ``VersionId`` of 1.
   A writer that committed in between moved the version, and Glue refuses the update: ``ConcurrentChange``, with the
   file written deleted (no entry names it, so one left where the delete fails is harmless). It is not made again
   on the other writer's metadata, as the metastore's commit is: plan again.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemaflow.catalog.iceberg_metadata import Unreadable, iceberg_table, is_iceberg, read_metadata
from schemaflow.catalog.metadata_files import check_location
from schemaflow.catalog.iceberg_updates import check_state, evolved, first_metadata, layout_updates, \
    next_metadata_location, property_changes, pyiceberg_parts
from schemaflow.errors import SchemaflowError
from schemaflow.model import COMMENT_KEY, METADATA_LOCATION, IcebergState, Table, split_key


@dataclass(frozen=True)
class Prepared:
    """A commit made and not yet sent: its metadata, the file it goes to, and the ``TableInput`` naming that file."""

    metadata: Any
    location: str
    entry: dict[str, Any]


def iceberg_entry(found: Mapping[str, Any]) -> bool:
    """Whether the Glue table ``found`` (as ``GetTable`` gives it) is an Iceberg table, as Iceberg's catalogs
    register one."""
    return is_iceberg(found.get("Parameters") or {})


def live(found: Mapping[str, Any], storage: Sequence[str | None]) -> tuple[dict[str, Any], str, Table]:
    """The metadata of the Iceberg table ``found``, where it is, and the table it is; ``SchemaflowError`` where it
    cannot be read (nothing is committed on what was not read)."""
    database, name = found["DatabaseName"], found["Name"]
    location = str(found["Parameters"][METADATA_LOCATION])
    try:
        metadata = read_metadata(location, storage)
        return metadata, location, iceberg_table(database, name, metadata, location)
    except Unreadable as unread:
        raise SchemaflowError(f"{database}.{name}: {unread.line()}; nothing was committed") from None


def prepare_create(table: Table, set: Mapping[str, str], location: str, storage: Sequence[str | None]) -> Prepared:
    """The first metadata of the new Iceberg table ``table`` at ``location``, with the properties ``set``."""
    metadata = first_metadata(table, location, set)
    return _prepared(table.key, metadata, {}, "", (), storage)


def prepare_commit(found: Mapping[str, Any], storage: Sequence[str | None], table: Table | None,
                   sources: Mapping[str, str], requires: IcebergState | None, set: Mapping[str, str],
                   unset: Sequence[str], expected: str | None) -> Prepared:
    """The commit of the Iceberg table ``found`` that makes it as ``table`` says (None: its properties alone), with
    ``set`` and ``unset`` among its properties: only while it is as ``requires`` says and stamped ``expected``."""
    base, base_location, held = live(found, storage)
    key = held.key
    check_state(held, requires, expected)
    updates = layout_updates(base, table, sources) if table is not None else []
    properties, removals, upgrade = property_changes(base, table, set, unset)
    metadata = evolved(base, base_location, updates, properties, removals, upgrade, key)
    return _prepared(key, metadata, found, base_location, removals, storage)


def _prepared(key: str, metadata: Any, found: Mapping[str, Any], base_location: str, removals: Sequence[str],
              storage: Sequence[str | None]) -> Prepared:
    location = next_metadata_location(metadata.location, metadata.properties, base_location)
    try:  # where the metadata says: written only where schemaflow would read it
        check_location(location, storage)
    except Unreadable as refused:
        raise SchemaflowError(f"{key}: its metadata file would go to {location!r}, and {refused}; set the table's "
                              "location on its database's storage or the warehouse's; nothing was committed") from None
    return Prepared(metadata, location, _entry(key, location, metadata, found, base_location, removals))


def registered(key: str, metadata_location: str, storage: Sequence[str | None]) -> dict[str, Any]:
    """The entry that adopts the Iceberg table whose current metadata is the file ``metadata_location`` as ``key``
    (nothing written: the file is read, bounded, for the columns and properties the entry mirrors)."""
    try:
        metadata = read_metadata(metadata_location, storage)
    except Unreadable as unread:
        raise SchemaflowError(f"{key}: {unread.line()}; nothing was registered") from None
    return _entry(key, metadata_location, pyiceberg_parts().TableMetadataUtil.parse_obj(metadata), {}, "", ())


def _entry(key: str, location: str, metadata: Any, found: Mapping[str, Any], base_location: str,
           removals: Sequence[str]) -> dict[str, Any]:
    """The ``TableInput`` of ``key`` naming the metadata file ``location`` (``metadata``'s), as pyiceberg's Glue
    catalog writes it, with the table's comment as ``Description`` and without the properties ``removals``."""
    from pyiceberg.catalog.glue import _construct_table_input

    _, name = split_key(key)
    held = {"Parameters": dict(found.get("Parameters") or {})}  # pyiceberg updates the parameters it is given
    entry = dict(_construct_table_input(name, location, metadata.properties, metadata, held if found else None,
                                        base_location or None))
    for removed in removals:
        entry["Parameters"].pop(removed, None)
    entry.pop("Description", None)
    if comment := metadata.properties.get(COMMENT_KEY):
        entry["Description"] = comment
    return entry


def stamp(found: Mapping[str, Any], storage: Sequence[str | None]) -> str | None:
    """The ``schemaflow.version`` of the Iceberg table ``found``: its metadata's, whatever its entry mirrors."""
    return live(found, storage)[2].version
