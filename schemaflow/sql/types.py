"""Column types in their canonical form: the compact, lower-case string the Hive metastore stores.

Declared types are parsed with sqlglot's Spark dialect, so aliases normalise (``integer`` is
``int``, ``long`` is ``bigint``) and nested types are checked, then rendered the way Spark writes
a Hive column (``decimal(12,2)``, ``array<string>``, ``struct<a:int,b:string>``), so a declared
type and a live one compare as plain strings.

A type is refused here unless Spark can create it and the metastore can keep it as that text:
decimal precision 1 to 38 and scale 0 to the precision, varchar(1) to varchar(65535), char(1) to
char(255) (Spark's and Hive's bounds), and struct fields named as columns are, each once whatever
its case. The metastore stores a type as the text ``struct<name:type,...>`` and reads it back by
splitting at ``:``, ``,``, ``<`` and ``>``, so a field name with those, a backquote or a space
(which sqlglot accepts quoted, ``struct<`a b`:int>``) could not come back as declared. Nested types
are checked alike. What a storage format changes on the way is a question of the format:
``check_avro`` says it for avro.
"""
from __future__ import annotations

from functools import lru_cache

import re

from sqlglot import exp
from sqlglot.errors import ParseError

from schemaflow.sql.dialect import DIALECT

T = exp.DataType.Type

# sqlglot's type → the Hive name, for every scalar type a Hive table column can hold.
_SCALARS: dict[exp.DType, str] = {
    T.TINYINT: "tinyint", T.SMALLINT: "smallint", T.INT: "int", T.BIGINT: "bigint",
    T.FLOAT: "float", T.DOUBLE: "double", T.DECIMAL: "decimal", T.BOOLEAN: "boolean",
    T.TEXT: "string", T.VARCHAR: "varchar", T.CHAR: "char", T.BINARY: "binary",
    T.DATE: "date", T.TIMESTAMP: "timestamp", T.TIMESTAMPTZ: "timestamp",
}
KNOWN = "tinyint, smallint, int, bigint, float, double, decimal(p,s), string, varchar(n), char(n), " \
        "boolean, binary, date, timestamp, array<t>, map<k,v>, struct<name:t,...>"

# Spark's DecimalType.MAX_PRECISION; Hive's HiveVarchar.MAX_VARCHAR_LENGTH and HiveChar.MAX_CHAR_LENGTH.
MAX_DECIMAL_PRECISION = 38
MAX_LENGTH = {"varchar": 65535, "char": 255}
_LONGER = {"varchar": "declare string for longer text", "char": "declare varchar(n) or string for longer text"}
# A struct field is named as a column is (common.json's identifier); Avro names follow the same rule.
FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InvalidType(ValueError):
    """A type that is not a valid Hive column type."""


# sqlglot parses a type, and ``_render`` walks it, recursing once per level of ``<`` or ``(``: far
# deeper than any real type, far from Python's stack limit.
MAX_NESTING = 32


@lru_cache(maxsize=4096)
def canonical_type(text: str) -> str:
    """The canonical Hive form of a declared type; raises ``InvalidType`` with a reason.

    Cached: a warehouse declares thousands of columns of a few dozen types, and sqlglot's parse is
    most of the cost of each (an invalid type is not cached, and is reported each time).
    """
    depth = 0
    for char in text:
        depth += (char in "<(") - (char in ">)")
        if depth > MAX_NESTING:
            raise InvalidType(f"type nested more than {MAX_NESTING} levels deep ({text[:30]}...): schemaflow reads "
                              f"at most {MAX_NESTING} levels of array<>, map<>, struct<> and (); flatten the type")
    try:
        parsed = exp.DataType.build(text, dialect=DIALECT)
    except (ParseError, ValueError) as error:
        raise InvalidType(f"unknown type {text!r}; expected one of: {KNOWN}") from error
    return _render(parsed, text)


def is_primitive(canonical: str) -> bool:
    """Whether a canonical type holds a single value: not an array, a map or a struct."""
    return not canonical.endswith(">")


_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def decimal_digits(canonical: str) -> tuple[int, int] | None:
    """The (precision, scale) of a canonical ``decimal(p,s)``; None for any other type."""
    match = _DECIMAL.fullmatch(canonical)
    return (int(match.group(1)), int(match.group(2))) if match else None


# In a canonical type (no spaces, fields named as identifiers): a struct field's name is what
# follows "<" or "," and precedes ":"; a type never precedes ":".
_FIELD = re.compile(r"(?<=[<,])\w+(?=:)")
_AVRO_INT = re.compile(r"\b(tinyint|smallint)\b(?!:)")
_CHAR_OR_VARCHAR = re.compile(r"\b(char|varchar)\(\d+\)")


def nests_char_or_varchar(canonical: str | None) -> bool:
    """Whether an array, map or struct type holds a char or varchar somewhere within.

    Spark 4.0 cannot change such a column of a data-source table, not even its comment: it compares
    the stored type with the type it resolved, which has string for each nested char and varchar
    (NOT_SUPPORTED_CHANGE_COLUMN, measured for json and parquet). A top-level char or varchar is fine.
    """
    return canonical is not None and not is_primitive(canonical) and bool(_CHAR_OR_VARCHAR.search(canonical))


def check_iceberg(canonical: str) -> None:
    """Raises ``InvalidType`` unless an Iceberg table keeps a column of this type as declared: Iceberg has
    no tinyint, smallint, char or varchar, and Spark's Iceberg catalog writes them as int and string."""
    ints, texts = _AVRO_INT.findall(canonical), _CHAR_OR_VARCHAR.findall(canonical)
    if ints or texts:
        stored = _CHAR_OR_VARCHAR.sub("string", _AVRO_INT.sub("int", canonical))
        raise InvalidType(f"Iceberg has no {' or '.join(sorted(set(ints + texts)))}: Spark would create "
                          f"{stored!r}; declare that")


def check_delta(canonical: str) -> None:
    """Raises ``InvalidType`` unless a Delta table keeps a column of this type as declared: Delta's log has no
    char or varchar type (Spark writes a string, with the length in the field's metadata, which other Delta readers
    do not enforce). Interval and void, which Delta refuses too, are no type a table file may declare."""
    texts = _CHAR_OR_VARCHAR.findall(canonical)
    if texts:
        stored = _CHAR_OR_VARCHAR.sub("string", canonical)
        raise InvalidType(f"Delta's log has no {' or '.join(sorted(set(texts)))}: it keeps {stored!r}, with the length "
                          "in metadata only Spark reads; declare that")


def check_avro(canonical: str) -> None:
    """Raises ``InvalidType`` unless an avro table gives back a column of this type as declared.

    Hive's AvroSerDe (2.3.10, in the pyspark jars) derives the table's avro schema from the
    columns: avro has int but no tinyint or smallint, so those come back as int; struct field
    names come back in lower case; a map key must be a string ("Key of Map can only be a String").
    Hive notes char and varchar as an avro string with a length that only Hive reads; whether
    they survive Spark has not been seen, so they are refused too: declare string.
    """
    if re.search(r"map<(?!string,)", canonical):
        raise InvalidType(f"avro map keys are strings: in {canonical!r} declare the keys as string, or use "
                          "another format")
    ints, texts = _AVRO_INT.findall(canonical), _CHAR_OR_VARCHAR.findall(canonical)
    lowered = _FIELD.sub(lambda field: field.group().lower(), canonical)
    changes = [f"{' and '.join(sorted(set(found)))} as {kind}" for found, kind in ((ints, "int"), (texts, "string"))
               if found]
    if lowered != canonical:
        changes.append("struct field names in lower case")
    if changes:
        stored = _CHAR_OR_VARCHAR.sub("string", _AVRO_INT.sub("int", lowered))
        raise InvalidType(f"avro stores {', '.join(changes)}: declare {stored!r}")


def _render(node: exp.DataType, text: str) -> str:
    kind = node.this
    args = node.expressions
    if kind == T.ARRAY and len(args) == 1:
        return f"array<{_render(args[0], text)}>"
    if kind == T.MAP and len(args) == 2:
        return f"map<{_render(args[0], text)},{_render(args[1], text)}>"
    if kind == T.STRUCT and args:
        return _struct(args, text)
    name = _SCALARS.get(kind)
    if name is None:
        raise InvalidType(f"unknown type {text!r}; expected one of: {KNOWN}")
    if name == "decimal":
        return _decimal([_whole_number(p, "decimal(12,2)", text) for p in args], text)
    if name in MAX_LENGTH:
        return _sized(name, [_whole_number(p, f"{name}(10)", text) for p in args], text)
    if args:
        raise InvalidType(f"type {name} takes no parameters (in {text!r})")
    return name


def _struct(fields: list[exp.Expression], text: str) -> str:
    """``struct<name:type,...>``: each field named as a column is, once whatever its case."""
    parts = []
    seen: set[str] = set()
    for field in fields:
        if not isinstance(field, exp.ColumnDef) or not isinstance(field.args.get("kind"), exp.DataType):
            raise InvalidType(f"invalid struct field in {text!r}")
        if field.args.get("constraints"):
            raise InvalidType(f"struct field options (such as COMMENT) are not supported in {text!r}")
        name = field.name
        if not FIELD_NAME.fullmatch(name):
            raise InvalidType(f"struct field name {name!r} in {text!r} is not valid: a field name has letters, digits "
                              "and underscores and does not start with a digit (the metastore keeps the type as "
                              "the text struct<name:type,...>)")
        if name.lower() in seen:
            raise InvalidType(f"struct field '{name}' is declared twice in {text!r} (field names are "
                              "case-insensitive): rename one")
        seen.add(name.lower())
        parts.append(f"{name}:{_render(field.args['kind'], text)}")
    return "struct<" + ",".join(parts) + ">"


def _whole_number(param: exp.Expression, example: str, text: str) -> int:
    written = param.sql(dialect=DIALECT)
    if not re.fullmatch(r"[0-9]+", written):
        raise InvalidType(f"{written!r} in {text!r} is not a whole number: write one, as in {example}")
    return int(written)


def _decimal(params: list[int], text: str) -> str:
    if len(params) > 2:
        raise InvalidType(f"decimal takes a precision and a scale, as in decimal(12,2) (not {text!r})")
    # Spark's default is decimal(10,0); decimal(p) is decimal(p,0).
    precision = params[0] if params else 10
    scale = params[1] if len(params) == 2 else 0
    if not 1 <= precision <= MAX_DECIMAL_PRECISION:
        raise InvalidType(f"decimal precision {precision} in {text!r} is out of range: Spark and Hive allow 1 "
                          f"to {MAX_DECIMAL_PRECISION}")
    if scale > precision:
        raise InvalidType(f"decimal scale {scale} in {text!r} is greater than the precision {precision}: the "
                          "scale counts the digits after the point, from 0 up to the precision")
    return f"decimal({precision},{scale})"


def _sized(name: str, params: list[int], text: str) -> str:
    if len(params) != 1:
        raise InvalidType(f"{name} needs a length, as in {name}(10)")
    limit = MAX_LENGTH[name]
    if not 1 <= params[0] <= limit:
        raise InvalidType(f"{name} length {params[0]} in {text!r} is out of range: Hive allows {name}(1) to "
                          f"{name}({limit}); {_LONGER[name]}")
    return f"{name}({params[0]})"
