"""Column types between Iceberg's metadata and schemaflow's canonical (Spark) form, and Iceberg's promotions.

An Iceberg table's metadata file writes each type as JSON (Iceberg's table spec, "Schemas and Data
Types"): a primitive as its name (``long``, ``decimal(12, 2)``, ``timestamptz``), a nested type as an
object whose every field, element, key and value carries a field id. Spark names the same types as
Iceberg's Spark catalog maps them: ``long`` is ``bigint``, ``timestamptz`` is Spark's ``timestamp``,
``timestamp`` (no zone) is ``timestamp_ntz``, ``uuid`` a string, ``fixed[n]`` a binary.

A type changes in place only as Iceberg promotes it (``promotes``): int to bigint, float to double, a
decimal's precision raised at the same scale. Every other change needs a new column.
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
    parsed, end = _parse(canonical, 0)
    if end != len(canonical):
        raise ValueError(f"not a canonical type: {canonical!r}")
    return _to_iceberg(parsed, ids)


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
