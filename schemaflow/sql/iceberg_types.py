"""Column types between Iceberg's metadata and schemaflow's canonical (Spark) form, and Iceberg's promotions.

An Iceberg table's metadata file writes each type as JSON (Iceberg's table spec, "Schemas and Data
Types"): a primitive as its name (``long``, ``decimal(12, 2)``, ``timestamptz``), a nested type as an
object whose every field, element, key and value carries a field id. Spark names the same types as
Iceberg's Spark catalog maps them: ``long`` is ``bigint``, ``timestamptz`` is Spark's ``timestamp``,
``timestamp`` (no zone) is ``timestamp_ntz``, ``uuid`` a string, ``fixed[n]`` a binary.

A type changes in place only as Iceberg evolves it (``evolves``): a primitive as Iceberg promotes it
(``promotes``: int to bigint, float to double, a decimal's precision raised at the same scale), a struct
by keeping each of its fields (by name, each evolving so) and adding others, an array's element and a
map's value so too. The nested fields kept keep their ids (``evolved_type``). Every other change needs a
new column.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# Iceberg's primitive type -> Spark's name for it (as Iceberg's TypeToSparkType maps it).
_TO_SPARK = {
    "boolean": "boolean", "int": "int", "long": "bigint", "float": "float", "double": "double",
    "date": "date", "timestamptz": "timestamp", "timestamp": "timestamp_ntz", "string": "string",
    "uuid": "string", "binary": "binary",
}
# Spark's name -> the Iceberg type a new column of it gets (as Iceberg's SparkTypeToType maps it).
_TO_ICEBERG = {"boolean": "boolean", "int": "int", "bigint": "long", "float": "float", "double": "double",
               "date": "date", "timestamp": "timestamptz", "timestamp_ntz": "timestamp", "string": "string",
               "binary": "binary"}
_DECIMAL = re.compile(r"decimal\((\d+), *(\d+)\)")
# The Spark types Iceberg has no type of its own for, in a type's place (not a struct field's name), and what
# Iceberg makes of them (SparkTypeToType): a byte or short is an int, a char or varchar a string.
_NARROW = re.compile(r"(?<![^<,:])(tinyint|smallint|(?:var)?char\(\d+\))(?=[>,]|$)")
_FIXED = re.compile(r"fixed\[(\d+)\]")


class UnknownIcebergType(ValueError):
    """A type in an Iceberg table's metadata that Spark has no column type for (``time``, ``variant``, ...)."""


def spark_type(iceberg: str | Mapping[str, Any]) -> str:
    """The canonical Spark type of an Iceberg type as its metadata file writes it."""
    if isinstance(iceberg, str):
        if iceberg in _TO_SPARK:
            return _TO_SPARK[iceberg]
        if decimal := _DECIMAL.fullmatch(iceberg):
            return f"decimal({decimal.group(1)},{decimal.group(2)})"
        if _FIXED.fullmatch(iceberg):
            return "binary"
        raise UnknownIcebergType(f"Iceberg type {iceberg!r} has no Spark column type")
    match iceberg.get("type"):
        case "struct":
            return "struct<" + ",".join(f"{f['name']}:{spark_type(f['type'])}" for f in iceberg["fields"]) + ">"
        case "list":
            return f"array<{spark_type(iceberg['element'])}>"
        case "map":
            return f"map<{spark_type(iceberg['key'])},{spark_type(iceberg['value'])}>"
        case other:
            raise UnknownIcebergType(f"Iceberg type {other!r} has no Spark column type")


def iceberg_type(canonical: str, ids: Iterator[int]) -> str | dict[str, Any]:
    """The Iceberg type of a new column of the canonical Spark type ``canonical``, its nested fields numbered
    from ``ids`` (Iceberg gives every field of a new column a new id); every nested field optional."""
    return _to_iceberg(_parse_whole(canonical), ids)


def iceberg_equivalent(canonical: str) -> str:
    """The canonical type a column of the canonical Spark type ``canonical`` has in an Iceberg table: the same,
    but that a tinyint or smallint is an int and a char or varchar a string, at any depth."""
    return _NARROW.sub(lambda m: "int" if m.group(1).endswith("int") else "string", canonical)


def promotes(old: str, new: str) -> bool:
    """Whether Iceberg changes a column of the canonical type ``old`` to ``new`` in place, by field id, with no
    data file rewritten: int to bigint, float to double, or a decimal's precision raised at the same scale."""
    if (old, new) in {("int", "bigint"), ("float", "double")}:
        return True
    before, after = _DECIMAL.fullmatch(old), _DECIMAL.fullmatch(new)
    return bool(before and after and before.group(2) == after.group(2) and int(before.group(1)) <= int(after.group(1)))


def evolves(old: str, new: str) -> bool:
    """Whether Iceberg changes a column of the canonical type ``old`` into ``new`` in place, by field id, with
    no data file rewritten: a promotion, or fields added to a struct at any depth (see the module's text)."""
    return _evolves(_parse_whole(old), _parse_whole(new))


def _evolves(old: _Parsed, new: _Parsed) -> bool:
    if isinstance(old, str) or isinstance(new, str):
        return isinstance(old, str) and isinstance(new, str) and (old == new or promotes(old, new))
    (kind, parts), (new_kind, new_parts) = old, new
    if kind != new_kind:
        return False
    if kind == "struct":
        fields = dict(new_parts)
        return all(name in fields and _evolves(part, fields[name]) for name, part in parts)
    if kind == "array":
        return _evolves(parts[0], new_parts[0])
    return parts[0] == new_parts[0] and _evolves(parts[1], new_parts[1])


def evolved_type(old: str | Mapping[str, Any], new: str, ids: Iterator[int]) -> str | dict[str, Any]:
    """The Iceberg type (as its metadata writes it) of a column of Iceberg type ``old`` evolved into the canonical
    type ``new`` (see ``evolves``): each nested field kept keeps its id, each one added gets the next of ``ids``."""
    return _evolved(old, _parse_whole(new), ids)


def _evolved(old: str | Mapping[str, Any], new: _Parsed, ids: Iterator[int]) -> str | dict[str, Any]:
    if isinstance(new, str) or isinstance(old, str):
        return old if isinstance(old, str) and spark_type(old) == new else _to_iceberg(new, ids)
    kind, parts = new
    if kind == "struct":
        kept = {field["name"]: field for field in old["fields"]}
        fields = [{**kept[name], "type": _evolved(kept[name]["type"], part, ids)} if name in kept else
                  {"id": next(ids), "name": name, "required": False, "type": _to_iceberg(part, ids)}
                  for name, part in parts]
        return {**old, "fields": fields}
    if kind == "array":
        return {**old, "element": _evolved(old["element"], parts[0], ids)}
    return {**old, "value": _evolved(old["value"], parts[1], ids)}


def _parse_whole(canonical: str) -> _Parsed:
    parsed, end = _parse(canonical, 0)
    if end != len(canonical):
        raise ValueError(f"not a canonical type: {canonical!r}")
    return parsed


# A canonical type parsed: a primitive's name, or (kind, parts) for array, map and struct.
_Parsed = str | tuple[str, list[Any]]


def _parse(text: str, at: int) -> tuple[_Parsed, int]:
    """The type starting at ``at`` in a canonical type, and where it ends."""
    match = re.compile(r"[a-z_]+(\(\d+,\d+\)|\(\d+\))?").match(text, at)
    if match is None:
        raise ValueError(f"not a canonical type: {text!r}")
    name, at = match.group(), match.end()
    if name in ("array", "map", "struct") and at < len(text) and text[at] == "<":
        parts: list[Any] = []
        at += 1
        while True:
            if name == "struct":
                colon = text.index(":", at)
                field_name, at = text[at:colon], colon + 1
                part, at = _parse(text, at)
                parts.append((field_name, part))
            else:
                part, at = _parse(text, at)
                parts.append(part)
            if text[at] == ">":
                return (name, parts), at + 1
            at += 1  # the comma between parts
    return name, at


def _to_iceberg(parsed: _Parsed, ids: Iterator[int]) -> str | dict[str, Any]:
    if isinstance(parsed, str):
        if parsed.startswith("decimal("):
            return parsed.replace(",", ", ")
        if parsed not in _TO_ICEBERG:
            raise ValueError(f"Iceberg has no type for Spark's {parsed}")
        return _TO_ICEBERG[parsed]
    kind, parts = parsed
    if kind == "struct":
        numbered = [(name, next(ids), part) for name, part in parts]
        return {"type": "struct", "fields": [{"id": number, "name": name, "required": False,
                                              "type": _to_iceberg(part, ids)} for name, number, part in numbered]}
    if kind == "array":
        element_id = next(ids)
        return {"type": "list", "element-id": element_id, "element": _to_iceberg(parts[0], ids),
                "element-required": False}
    key_id, value_id = next(ids), next(ids)
    return {"type": "map", "key-id": key_id, "key": _to_iceberg(parts[0], ids), "value-id": value_id,
            "value": _to_iceberg(parts[1], ids), "value-required": False}
