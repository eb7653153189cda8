"""An Iceberg table's partition spec and sort order, as Spark writes them, read by an exact grammar.

A partition field is a data column (identity) or one of Iceberg's transforms of it, written as in
Spark's ``PARTITIONED BY`` (``day(ts)``, ``bucket(16, id)``, ``truncate(4, code)``, ``region``); a
sort term is such a field with a direction and where nulls go, as in ``WRITE ORDERED BY``
(``ts DESC NULLS LAST``). The text comes from the user's files, so it is read by a grammar of a
few tokens and nothing else: no SQL expression is evaluated or passed on as written; what
schemaflow keeps is the model's ``PartitionField`` and ``SortTerm``.

Which source types a transform takes is Iceberg's table specification ("Partition Transforms"),
in the Hive types Spark's Iceberg catalog maps to Iceberg's (``sql.types.check_iceberg`` keeps the
rest out): a time transform needs a date or timestamp (hour, a timestamp), bucket takes a whole
number, decimal, date, timestamp, string or binary, truncate a whole number, decimal, string or
binary. Iceberg names a field after its column and transform family (``id_bucket``, ``ts_day``),
so a column takes one field of each family, and one time transform (``day(ts)`` with
``hour(ts)`` is refused as redundant).
"""
from __future__ import annotations

import re

from schemaflow.model import PartitionField, SortTerm
from schemaflow.sql.types import is_primitive

# Spark's spellings of each transform (its own v2 names, years(ts), and Iceberg's), to Iceberg's name.
_TRANSFORMS = {"identity": "identity", "year": "year", "years": "year", "month": "month", "months": "month",
               "day": "day", "days": "day", "date": "day", "hour": "hour", "hours": "hour", "date_hour": "hour",
               "bucket": "bucket", "truncate": "truncate"}
_WRITTEN = "a column's name, year(c), month(c), day(c), hour(c), bucket(N, c) or truncate(W, c)"
_TIME = frozenset({"year", "month", "day", "hour"})
# The base types (``decimal(p,s)`` is decimal) each transform takes; identity takes any primitive type.
_SOURCE_TYPES = {
    "year": frozenset({"date", "timestamp"}), "month": frozenset({"date", "timestamp"}),
    "day": frozenset({"date", "timestamp"}), "hour": frozenset({"timestamp"}),
    "bucket": frozenset({"int", "bigint", "decimal", "date", "timestamp", "string", "binary"}),
    "truncate": frozenset({"int", "bigint", "decimal", "string", "binary"}),
}
_WAY_OUT = {"year": "partition by it with identity, or declare it a date or timestamp",
            "hour": "use day(c) for a date, or declare it a timestamp",
            "bucket": "bucket a whole number, decimal, date, timestamp, string or binary column",
            "truncate": "truncate a whole number, decimal, string or binary column"}
_MAX_INT = 2**31 - 1  # a bucket count and a width are Java ints in Iceberg's metadata
_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>[0-9]+)|(?P<mark>[(),])|(?P<other>\S))")
_DIRECTIONS: dict[tuple[str, ...], bool] = {("asc",): False, ("desc",): True}
_NULLS: dict[tuple[str, ...], bool] = {("nulls", "first"): True, ("nulls", "last"): False}


class InvalidTerm(ValueError):
    """A partition field or sort term that Iceberg would not take, with what to write instead."""


def parse_field(text: str) -> PartitionField:
    """The partition field ``text`` writes; raises ``InvalidTerm``."""
    tokens = _tokens(text)
    field, rest = _field(tokens, text)
    if rest:
        raise InvalidTerm(f"{_shown(text)} is not a partition field: write {_WRITTEN}")
    return field


def parse_sort_term(text: str) -> SortTerm:
    """The sort term ``text`` writes (``ts DESC NULLS LAST``, ``bucket(16, id)``); raises ``InvalidTerm``."""
    field, rest = _field(_tokens(text), text)
    words = tuple(word.lower() for kind, word in rest if kind == "name")
    if len(words) != len(rest):
        raise InvalidTerm(f"{_shown(text)} is not a sort term: write a field ({_WRITTEN}), then ASC or DESC, then "
                          "NULLS FIRST or NULLS LAST, such as 'ts DESC NULLS LAST'")
    descending = _DIRECTIONS.get(words[:1])
    direction = 1 if descending is not None else 0
    nulls_first = _NULLS.get(words[direction:])
    if words[direction:] and nulls_first is None:
        raise InvalidTerm(f"{_shown(text)} is not a sort term: after the field, write ASC or DESC, then NULLS FIRST "
                          "or NULLS LAST (each may be left out), such as 'ts DESC NULLS LAST'")
    descending = bool(descending)
    # Iceberg's defaults, spelt out so that 'id' and 'id ASC NULLS FIRST' are one term.
    return SortTerm(field, descending, (not descending) if nulls_first is None else nulls_first)


def check_source_type(field: PartitionField, canonical: str) -> None:
    """Raises ``InvalidTerm`` unless the transform of ``field`` takes a column of the canonical type ``canonical``."""
    if not is_primitive(canonical):
        raise InvalidTerm(f"{field.column} is a {canonical.split('<')[0]}: Iceberg partitions and sorts by primitive "
                          "columns only; use another column")
    allowed = _SOURCE_TYPES.get(field.transform)
    base = canonical.split("(")[0]
    if allowed is not None and base not in allowed:
        way_out = _WAY_OUT.get(field.transform, _WAY_OUT["year"])
        raise InvalidTerm(f"{field.transform} takes no {canonical} column, and {field.column} is one: {way_out}")


def family(field: PartitionField) -> str:
    """What Iceberg names a field after besides its column: a column has one field of each."""
    return "time" if field.transform in _TIME else field.transform


def _field(tokens: list[tuple[str, str]], text: str) -> tuple[PartitionField, list[tuple[str, str]]]:
    """The field the tokens start with, and the tokens after it."""
    if not tokens or tokens[0][0] != "name":
        raise InvalidTerm(f"{_shown(text)} does not start with a column or a transform: write {_WRITTEN}")
    name = tokens[0][1]
    if tokens[1:2] != [("mark", "(")]:
        return PartitionField("identity", name.lower()), tokens[1:]
    close = next((i for i, token in enumerate(tokens) if token == ("mark", ")")), None)
    if close is None:
        raise InvalidTerm(f"{_shown(text)} has no closing parenthesis: write {_WRITTEN}")
    transform = _TRANSFORMS.get(name.lower())
    if transform is None:
        raise InvalidTerm(f"unknown transform {name!r}: Iceberg's are identity, year, month, day, hour, bucket "
                          f"and truncate; write {_WRITTEN}")
    arguments = tokens[2:close]
    kinds = [kind for kind, _ in arguments]
    if transform in ("bucket", "truncate"):
        what = "count" if transform == "bucket" else "width"
        if kinds == ["name", "mark", "number"]:
            raise InvalidTerm(f"{_shown(text)}: write the {what} first, {transform}({arguments[2][1]}, "
                              f"{arguments[0][1]})")
        if kinds != ["number", "mark", "name"] or arguments[1][1] != ",":
            raise InvalidTerm(f"{_shown(text)}: {transform} takes a {what} and a column, {transform}(N, c)")
        argument = int(arguments[0][1])
        if not 0 < argument <= _MAX_INT:
            raise InvalidTerm(f"{_shown(text)}: a {transform}'s {what} is a whole number from 1 to {_MAX_INT}")
        return PartitionField(transform, arguments[2][1].lower(), argument), tokens[close + 1:]
    if kinds != ["name"]:
        raise InvalidTerm(f"{_shown(text)}: {transform} takes one column, {transform}(c)")
    return PartitionField(transform, arguments[0][1].lower()), tokens[close + 1:]


def _tokens(text: str) -> list[tuple[str, str]]:
    """The names, numbers and marks of ``text``, as (kind, text); raises ``InvalidTerm`` on anything else."""
    tokens = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        assert kind is not None  # every alternative is a named group
        if kind == "other":
            raise InvalidTerm(f"{_shown(text)} holds {match.group(kind)!r}, which no partition field or sort term "
                              f"does: write {_WRITTEN}")
        tokens.append((kind, match.group(kind)))
    return tokens


def _shown(text: str) -> str:
    """The user's text in a message: quoted, and cut short when long."""
    return repr(text if len(text) <= 80 else text[:77] + "...")
