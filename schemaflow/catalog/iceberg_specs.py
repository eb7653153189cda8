"""The fields of an Iceberg table's partition spec, numbered and named as Iceberg's own library does.

A new table's fields are named as Iceberg's ``PartitionSpec.Builder`` names them (what Spark's ``CREATE TABLE ...
PARTITIONED BY`` makes): the column, with ``_bucket``, ``_trunc``, ``_year`` ... after it. A table's next spec
follows Iceberg's spec evolution (Java's ``BaseUpdatePartitionSpec``, pyiceberg's ``UpdateSpec``, which agree):

- a field the current spec keeps keeps its id and name;
- from format version 2, a field added that any earlier spec had (the same source column and transform) takes
  that field's id and name back; otherwise it gets the next id, and the name Iceberg's evolution gives it, which
  carries a bucket's count and a truncate's width (``id_bucket_4`` after ``id_bucket``, ``code_trunc_2``);
- format version 1 keeps each field in its place: a field removed turns ``void`` under its own name, and is
  renamed ``<name>_<field id>`` only when a field added takes that name.

Iceberg's metadata tables (Spark's ``.files``, ``.partitions``, ``.entries``) read the fields of every spec as one
struct, by field id under the latest name of each: two ids of one name break them for good ("multiple fields for
name partition.id_bucket"). Where a field another engine named would collide so (Iceberg itself refuses the first
case, and does not see the second), nothing is committed and the error says which field to rename.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from schemaflow.errors import SchemaflowError
from schemaflow.model import PartitionField

VOID = "void"
_TIME = frozenset({"year", "month", "day", "hour"})
# PartitionSpec.Builder's suffixes (a new table's fields), by transform; identity has none.
_CREATED = {"bucket": "_bucket", "truncate": "_trunc", **{unit: f"_{unit}" for unit in _TIME}}
_RENAME = ("rename that partition field with Iceberg's API (UpdatePartitionSpec.renameField, or pyiceberg's "
           "update_spec().rename_field), then plan again")


def transform_text(field: PartitionField) -> str:
    """A partition field or sort term's transform as Iceberg writes it: ``bucket[16]``, ``day``, ``identity``."""
    return field.transform if field.argument is None else f"{field.transform}[{field.argument}]"


def created_name(term: PartitionField) -> str:
    """The name Iceberg gives ``term`` in a new table's spec: ``id_bucket``, ``ts_day``, ``region``."""
    return term.column + _CREATED.get(term.transform, "")


def evolved_name(term: PartitionField) -> str:
    """The name Iceberg's spec evolution gives ``term`` when it adds it: ``id_bucket_4``, ``code_trunc_2``,
    ``ts_day``, ``region``."""
    if term.transform in ("bucket", "truncate"):
        return f"{created_name(term)}_{term.argument}"
    return created_name(term)


def created_fields(terms: Sequence[PartitionField], ids_by_name: Mapping[str, int],
                   new_ids: Iterator[int]) -> list[dict[str, Any]]:
    """A new table's partition fields: ids from ``new_ids``, each named as Iceberg's builder names it."""
    return [_field(term, ids_by_name, new_ids, created_name(term)) for term in terms]


def next_fields(key: str, version: int, specs: Sequence[Mapping[str, Any]], current: Mapping[str, Any],
                terms: Sequence[PartitionField], ids_by_name: Mapping[str, int], last_id: int) -> list[dict[str, Any]]:
    """The fields of the table ``key``'s next spec, partitioned by ``terms`` at format version ``version``:
    ``specs`` are every spec of its metadata, ``current`` the default one, ``ids_by_name`` the field ids of the
    next schema's columns, ``last_id`` the highest partition field id assigned. Raises ``SchemaflowError`` where a
    name Iceberg gives would be another field's."""
    new_ids = itertools.count(last_id + 1)
    wanted = [(ids_by_name[t.column], transform_text(t)) for t in terms]
    if version == 1:
        fields = [dict(f) if _key(f) in wanted or f["transform"] == VOID else {**f, "transform": VOID}
                  for f in current["fields"]]
        placed = {_key(f) for f in fields}
        for term, added in zip(terms, wanted, strict=True):
            if added not in placed:
                field = _field(term, ids_by_name, new_ids, evolved_name(term))
                _make_room(key, fields, field["name"])
                fields.append(field)
    else:
        earlier = {**{_key(f): f for f in reversed(_latest(specs).values())},  # the first a spec had
                   **{_key(f): f for f in current["fields"]}}  # what the current spec keeps, above all
        fields = [dict(earlier[added]) if added in earlier else _field(term, ids_by_name, new_ids, evolved_name(term))
                  for term, added in zip(terms, wanted, strict=True)]
    _check_names(key, fields, specs, set(ids_by_name.values()))
    return fields


def _field(term: PartitionField, ids_by_name: Mapping[str, int], new_ids: Iterator[int], name: str) -> dict[str, Any]:
    return {"source-id": ids_by_name[term.column], "field-id": next(new_ids), "transform": transform_text(term),
            "name": name}


def _key(field: Mapping[str, Any]) -> tuple[int, str]:
    return field["source-id"], field["transform"]


def _latest(specs: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """Every partition field of ``specs`` by field id, as the latest spec that has it holds it (its latest name)."""
    latest: dict[int, Mapping[str, Any]] = {}
    for spec in sorted(specs, key=lambda s: s.get("spec-id", 0)):
        for field in spec["fields"]:
            latest[field["field-id"]] = field
    return latest


def _make_room(key: str, fields: list[dict[str, Any]], name: str) -> None:
    """Iceberg's rule for a name a format version 1 spec holds already: a void field gives it up
    (renamed ``<name>_<field id>``); any other keeps it, and the field cannot be added."""
    for field in fields:
        if field["name"] == name:
            if field["transform"] != VOID:
                raise SchemaflowError(f"{key}: Iceberg names the partition field it adds {name!r}, the name of its "
                                      f"field {field['field-id']} ({field['transform']}): {_RENAME}; nothing was "
                                      "committed")
            field["name"] = f"{name}_{field['field-id']}"


def _check_names(key: str, fields: Sequence[Mapping[str, Any]], specs: Sequence[Mapping[str, Any]],
                 columns: set[int]) -> None:
    """Refuse a spec whose names would make two field ids one name in Iceberg's metadata tables: among its own
    fields, or with a field of an earlier spec whose source column the table still has."""
    named = {f["name"]: f["field-id"] for f in fields}
    taken = {f["name"]: f["field-id"] for f in _latest(specs).values()
             if f["source-id"] in columns and f["field-id"] not in named.values()}
    for field in fields:
        other = taken.get(field["name"], named[field["name"]])
        if other != field["field-id"]:
            raise SchemaflowError(f"{key}: the partition field {field['transform']} of source {field['source-id']} "
                                  f"would be named {field['name']!r}, as the partition field {other} is, and Iceberg's "
                                  f"metadata tables would fail on the name: {_RENAME}; nothing was committed")
