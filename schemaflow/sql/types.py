"""Column types in their canonical form: the compact, lower-case string the Hive metastore stores.

Declared types are parsed with sqlglot's Spark dialect, so aliases normalise (``integer`` is
``int``, ``long`` is ``bigint``) and nested types are checked, then rendered the way Spark writes
a Hive column (``decimal(12,2)``, ``array<string>``, ``struct<a:int,b:string>``), so a declared
type and a live one compare as plain strings.
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import ParseError

T = exp.DataType.Type

# sqlglot's type → the Hive name, for every scalar type a Hive table column can hold.
_SCALARS: dict[exp.DataType.Type, str] = {
    T.TINYINT: "tinyint", T.SMALLINT: "smallint", T.INT: "int", T.BIGINT: "bigint",
    T.FLOAT: "float", T.DOUBLE: "double", T.DECIMAL: "decimal", T.BOOLEAN: "boolean",
    T.TEXT: "string", T.VARCHAR: "varchar", T.CHAR: "char", T.BINARY: "binary",
    T.DATE: "date", T.TIMESTAMP: "timestamp", T.TIMESTAMPTZ: "timestamp",
}
KNOWN = "tinyint, smallint, int, bigint, float, double, decimal(p,s), string, varchar(n), char(n), " \
        "boolean, binary, date, timestamp, array<t>, map<k,v>, struct<name:t,...>"


class InvalidType(ValueError):
    """A type that is not a valid Hive column type."""


def canonical_type(text: str) -> str:
    """The canonical Hive form of a declared type; raises ``InvalidType`` with a reason."""
    try:
        parsed = exp.DataType.build(text, dialect="spark")
    except (ParseError, ValueError) as error:
        raise InvalidType(f"unknown type {text!r}; expected one of: {KNOWN}") from error
    return _render(parsed, text)


def _render(node: exp.DataType, text: str) -> str:
    kind = node.this
    args = node.expressions
    if kind == T.ARRAY and len(args) == 1:
        return f"array<{_render(args[0], text)}>"
    if kind == T.MAP and len(args) == 2:
        return f"map<{_render(args[0], text)},{_render(args[1], text)}>"
    if kind == T.STRUCT and args:
        parts = []
        for field in args:
            if not isinstance(field, exp.ColumnDef) or not isinstance(field.args.get("kind"), exp.DataType):
                raise InvalidType(f"invalid struct field in {text!r}")
            if field.args.get("constraints"):
                raise InvalidType(f"struct field options (such as COMMENT) are not supported in {text!r}")
            parts.append(f"{field.name}:{_render(field.args['kind'], text)}")
        return "struct<" + ",".join(parts) + ">"
    name = _SCALARS.get(kind)
    if name is None:
        raise InvalidType(f"unknown type {text!r}; expected one of: {KNOWN}")
    params = [p.sql(dialect="spark") for p in args]
    if name == "decimal":
        params = params or ["10", "0"]  # Spark's default precision and scale
        if len(params) == 1:
            params.append("0")
    elif name in ("varchar", "char"):
        if len(params) != 1:
            raise InvalidType(f"{name} needs a length, as in {name}(10)")
    elif params:
        raise InvalidType(f"type {name} takes no parameters (in {text!r})")
    return name + (f"({','.join(params)})" if params else "")
