"""The SQL of a table rewrite: the query that moves the rows, and the queries that verify the copy.

A rewrite fills a new table from the live one (``plan.rewrite``): each new column from the live column it
was (by name, or by the rename a migration states), converted with ``TRY_CAST`` where the type changes, or
NULL where it is new. ``TRY_CAST`` rather than ``CAST``: a value the new type cannot hold becomes NULL
instead of failing the query half-way (Spark 4's ANSI mode), and the verification counts every such value,
so that a lossy conversion stops the rewrite with a report rather than an error from deep inside Spark.

A partition column filled from a data column of text may meet ``''``, which Spark writes as Hive's default partition
(``__HIVE_DEFAULT_PARTITION__``, for a Hive-format and a data-source table alike) and reads back as NULL: the copy then
differs from the rows moved, and the verification stops it (``empty_partition_values``). Where a migration accepts the
loss in that column, the query writes ``NULLIF(column, '')``, what the partition reads back as. A string partition
column of a table Spark's file writer writes, where no value is ``''`` or its ``''`` is accepted, is written as
``COALESCE(column, '')`` and verified as ``NULLIF(column, '')`` (``default_partitions``): the same partitions, and no
projection of every row that Spark's write adds for a string partition column that may be NULL.

Verification compares the rows the query moves (observed as the copy writes them) with the rows the new table
holds: a count and an order-independent checksum of the rows (the sum of a 64-bit hash of each row, its two halves
summed apart so that no sum overflows; a row's hash is the hash of its values' hashes in the columns' order, so that
a value moved to another column or another row changes it); where they differ, per partition of the new table and
with a checksum of each column beside the rows', to say where and which columns. Every statement is a sqlglot tree
written in Spark's dialect.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from sqlglot import exp

from schemaflow.model import Table, column_type
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.quoting import identifier_node, table_node
from schemaflow.sql.table_kinds import Layout, kind_of

WIDENS = ("tinyint", "smallint", "int", "bigint")
INTEGER_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}
# Spark's setting for how Parquet files hold timestamps, and the value Iceberg can register: Spark's default (INT96)
# is read by Spark and Hive, but not registered by Iceberg's Python implementation.
TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
MICROS = "TIMESTAMP_MICROS"
ROWS = "rows"          # the column of a verification query's row count
MOVED = "moved"        # the alias of the rows the query moves, in the verification of the source
STORED = "stored"      # the alias of some partitions of the copy, in its verification
# + a converted column's name, where the conversion may lose values (``Filled.lossy``): in the verification of the
# source, whether the conversion made a value NULL (no declared column has a space in its name).
LOST = "lost "
# + a column's name: the sums of the high and of the low halves of its values' hashes (named apart from the
# partition columns a verification groups by); + EVERY: those of the rows' hashes.
HIGH, LOW = "high ", "low "
EVERY = "*"


@dataclass(frozen=True)
class Filled:
    """Where one column of the new table takes its values from: a live column (``source``), converted
    from ``old_type`` when that differs from the new type; None: a new column, NULL in every row.
    ``accepts_loss``: values the conversion cannot hold become NULL as intended (a migration's ``accept_loss``);
    ``empty_as_null``: ``''`` is written as NULL, as the partition Spark writes it in reads back (accepted likewise).
    ``nulls_as_empty``: a partition column of text that Spark's file writer puts in the default partition whether NULL
    or ``''`` (``default_partitions``): written as ``COALESCE(value, '')``, which Spark knows holds no NULL, and
    verified as ``NULLIF(value, '')``, what it reads back as."""

    column: str
    type: str
    source: str | None
    old_type: str | None
    accepts_loss: bool = False
    empty_as_null: bool = False
    nulls_as_empty: bool = False

    @property
    def cast(self) -> bool:
        return self.source is not None and self.old_type != self.type

    @property
    def lossy(self) -> bool:
        """Whether the conversion may make a value NULL (``lossless``): only such a column's values are checked as the
        copy writes them (``LOST``), a check that costs per row."""
        return self.cast and not lossless(self.old_type or "", self.type)


def filling(want: Table, have: Table, renamed: Mapping[str, str], accepted: Collection[str] = ()) -> tuple[Filled, ...]:
    """Each column of ``want`` (data, then partition columns) with the live column of ``have`` it is filled from;
    ``renamed`` maps a new name to the live column a migration renamed into it, ``accepted`` names the columns whose
    conversion (or, in a partition column, whose ``''``) may make values NULL."""
    live = {c.name: column_type(c) for c in have.all_columns}
    filled = []
    for column in want.all_columns:
        source = renamed.get(column.name, column.name if column.name in live else None)
        filled.append(Filled(column.name, column_type(column), source, live.get(source) if source else None,
                             column.name in accepted))
    empties = {f.column for f in empty_partition_values(want, have, filled)}
    filled = [replace(f, empty_as_null=f.accepts_loss and f.column in empties) for f in filled]
    defaulted = default_partitions(want, filled, empties)
    return tuple(replace(f, nulls_as_empty=f.column in defaulted) for f in filled)


def default_partitions(want: Table, columns: Sequence[Filled], empties: Collection[str]) -> set[str]:
    """The partition columns of ``want`` (filled by ``columns``) that its copy writes as ``COALESCE(value, '')``: of
    type string, in a table Spark's file writer writes (a Hive format's, a file data source's), which puts a NULL and
    a ``''`` alike in Hive's default partition; none of whose values is ``''`` (``empties``: those that may be) or
    whose ``''`` is accepted as NULL. Spark's write of a string partition column that may be NULL projects every row
    once more to turn its ``''`` into NULL (its ``empty2null``), which the observation of the rows the copy's
    verification makes keeps apart from the scan's projection: measured, +17% of the copy's CPU instead of +33%
    (docs/performance.md)."""
    if kind_of(want).layout is not Layout.STORAGE:  # their own writers (Iceberg's keeps '' as a value of its own)
        return set()
    keys = {c.name for c in want.partition_columns}
    return {f.column for f in columns if f.column in keys and f.type == "string"
            and (f.column not in empties or f.empty_as_null)}


def empty_partition_values(want: Table, have: Table, columns: Sequence[Filled]) -> tuple[Filled, ...]:
    """The partition columns of ``want`` (filled by ``columns``) whose rows may hold ``''``, which Spark writes as the
    default partition, read back as NULL: those of text filled from a data column of text of ``have``. A live partition
    value is never ``''`` (Spark writes it as the default partition, and refuses it in a partition's spec)."""
    data = {c.name for c in have.columns}
    keys = {c.name for c in want.partition_columns}
    return tuple(f for f in columns if f.column in keys and f.source in data and _text(f.type)
                 and _text(f.old_type or ""))


def _text(type_: str) -> bool:
    """Whether a value of ``type_`` may be ``''`` (a ``char`` is padded to its length)."""
    return type_ == "string" or type_.startswith("varchar(")


def one_to_one(columns: Sequence[Filled], want: Sequence[str], have: Sequence[str]) -> bool:
    """Whether each partition of a table partitioned by ``have`` becomes exactly one partition of the new table
    (partitioned by ``want``, filled by ``columns``): the same partition columns in the same order, renamed at most,
    their types unchanged. A rewrite then copies it, and copies it again, partition by partition."""
    filled = {f.column: f for f in columns}
    return bool(have) and len(have) == len(want) and all(
        (filled[w].source or "").lower() == h.lower() and not filled[w].cast for w, h in zip(want, have, strict=True))


def lossless(old: str, new: str) -> bool:
    """Whether every value of type ``old`` survives a cast to ``new`` (a widening, or to text)."""
    if old == new or new == "string":
        return True
    old_base, new_base = old.split("(")[0], new.split("(")[0]
    if old_base in WIDENS and new_base in WIDENS:
        return WIDENS.index(old_base) <= WIDENS.index(new_base)
    if old_base in INTEGER_DIGITS and new_base == "decimal":
        precision, scale = _digits(new)
        return precision - scale >= INTEGER_DIGITS[old_base]
    if old_base == "decimal" and new_base == "decimal":
        (p1, s1), (p2, s2) = _digits(old), _digits(new)
        return s2 >= s1 and p2 - s2 >= p1 - s1
    return (old_base, new_base) in {("float", "double"), ("tinyint", "double"), ("smallint", "double"),
                                    ("int", "double"), ("date", "timestamp"), ("char", "varchar")}


def convertible(old: str, new: str) -> bool:
    """Whether Spark casts a value of ``old`` to ``new``: any primitive to any primitive (``TRY_CAST`` makes what
    does not fit NULL), a nested type only to one of the same shape (an array to an array, a map to a map, a
    struct to a struct of as many fields), each part convertible."""
    return _same_shape(exp.DataType.build(old, dialect=DIALECT), exp.DataType.build(new, dialect=DIALECT))


def _same_shape(old: exp.DataType, new: exp.DataType) -> bool:
    nested = (exp.DataType.Type.ARRAY, exp.DataType.Type.MAP, exp.DataType.Type.STRUCT)
    if old.this not in nested and new.this not in nested:
        return True
    if old.this != new.this:  # a nested type to a primitive one (whose parameters are no parts), or to another shape
        return False
    parts = [_part(e) for e in old.expressions], [_part(e) for e in new.expressions]
    return len(parts[0]) == len(parts[1]) and all(
        a is not None and b is not None and _same_shape(a, b) for a, b in zip(*parts, strict=True))


def _part(node: exp.Expression) -> exp.DataType | None:
    """The type of a nested type's part: an element, a key or value, or a struct's field (None: not a type)."""
    kind = node.args.get("kind") if isinstance(node, exp.ColumnDef) else node
    return kind if isinstance(kind, exp.DataType) else None


def _digits(decimal: str) -> tuple[int, int]:
    inside = decimal.partition("(")[2].rstrip(")")
    precision, _, scale = inside.partition(",")
    return int(precision or 10), int(scale or 0)


def _value(filled: Filled) -> exp.Expression:
    """The expression a column of the new table is filled with."""
    to = exp.DataType.build(filled.type, dialect=DIALECT)
    if filled.source is None:
        return exp.Cast(this=exp.Null(), to=to)
    column: exp.Expression = exp.column(identifier_node(filled.source))
    value = exp.TryCast(this=column, to=to, safe=True) if filled.cast else column
    if filled.nulls_as_empty:  # '' and NULL alike land as NULL: its '' too, where that is accepted
        return exp.Coalesce(this=value, expressions=[exp.Literal.string("")])
    return exp.Nullif(this=value, expression=exp.Literal.string("")) if filled.empty_as_null else value


def select(source: str, columns: Sequence[Filled]) -> str:
    """The query that moves the rows of the table ``source`` into the new table's columns, in their order."""
    query = exp.select(*(exp.alias_(_value(f), identifier_node(f.column)) for f in columns)).from_(table_node(source))
    return query.sql(dialect=DIALECT)


def insert(target: str, query: str) -> str:
    """``INSERT INTO target`` the rows of ``query`` (a ``select``), by position."""
    return f"INSERT INTO {table_node(target).sql(dialect=DIALECT)}\n{query}"


def _hash(filled: Filled) -> exp.Expression:
    """A 64-bit hash of each value of one column (of NULL, the hash's seed), as it reads back. Spark hashes no map: a
    column that holds one is hashed as its JSON text."""
    value: exp.Expression = exp.column(identifier_node(filled.column))
    if "map<" in filled.type:
        value = exp.Anonymous(this="to_json", expressions=[value])
    if filled.nulls_as_empty:
        value = exp.Nullif(this=value, expression=exp.Literal.string(""))
    return exp.Anonymous(this="xxhash64", expressions=[value])


def _summed(hashed: exp.Expression, name: str) -> list[exp.Expr]:
    """The checksum of a hash over the rows: its high and its low 32 bits summed apart (as bigints, which no table's
    rows overflow: Spark's sum of a decimal wide enough for whole hashes is several times slower), named ``HIGH`` and
    ``LOW`` + ``name``."""
    halves = (exp.BitwiseRightShift(this=hashed, expression=exp.Literal.number(32)),
              exp.BitwiseAnd(this=hashed.copy(), expression=exp.Literal.number(0xFFFFFFFF)))
    return [exp.alias_(exp.Sum(this=half), identifier_node(prefix + name))
            for prefix, half in zip((HIGH, LOW), halves, strict=True)]


def _nulled(filled: Filled) -> exp.Expression:
    """1 where the conversion of a column makes a value NULL, else 0."""
    column = exp.column(identifier_node(filled.source or ""))
    converted = exp.TryCast(this=column.copy(), to=exp.DataType.build(filled.type, dialect=DIALECT), safe=True)
    return exp.If(this=exp.and_(exp.Not(this=exp.Is(this=column, expression=exp.Null())),
                                exp.Is(this=converted, expression=exp.Null())),
                  true=exp.Literal.number(1), false=exp.Literal.number(0))


def _totals(columns: Sequence[Filled], nulled: bool) -> list[exp.Expr]:
    """The row count and the rows' checksum (``EVERY``: one hash a row, of its values' hashes in the columns' order);
    with ``nulled``, how many values each conversion that may lose values made NULL. One sum of a hash a row, whatever the columns: the
    copy observes it as it writes and the verification reads it back, so that its cost is the rewrite's."""
    lost = [exp.alias_(exp.Sum(this=exp.column(identifier_node(LOST + f.column))), identifier_node(LOST + f.column))
            for f in columns if f.lossy and nulled]
    return [exp.alias_(exp.Count(this=exp.Star()), ROWS), *_summed(_row_hash(columns), EVERY), *lost]


def _row_hash(columns: Sequence[Filled]) -> exp.Expression:
    """A row's hash: of its values' hashes in the columns' order."""
    return exp.Anonymous(this="xxhash64", expressions=[_hash(f) for f in columns])


def totals(columns: Sequence[Filled], nulled: bool = False) -> list[str]:
    """``_totals`` as SQL expressions, each named: what is observed of the rows as the copy writes them."""
    return [e.sql(dialect=DIALECT) for e in _totals(columns, nulled)]


def checksums(relation: exp.Expression, columns: Sequence[Filled], keys: Sequence[str], nulled: bool = False) -> str:
    """The totals (``_totals``) of ``relation``, all rows as one; with the partition columns ``keys``, per value of
    them and with each column's checksum beside (``HIGH``/``LOW`` + its name), to say where a copy differs and in
    which columns. With ``nulled`` (``relation`` is ``moved``), also how many values each conversion that may lose
    values made NULL (``LOST``)."""
    defaulted = {f.column for f in columns if f.nulls_as_empty}
    grouped = [exp.Nullif(this=exp.column(identifier_node(k)), expression=exp.Literal.string(""))
               if k in defaulted else exp.column(identifier_node(k)) for k in keys]
    each = [s for f in columns for s in _summed(_hash(f), f.column)] if keys else []
    query = exp.select(*(exp.alias_(g, identifier_node(k)) if k in defaulted else g for g, k in zip(grouped, keys,
                                                                                                   strict=True)),
                       *_totals(columns, nulled), *each).from_(relation)
    if keys:
        query = query.group_by(*(g.copy() for g in grouped))
    return query.sql(dialect=DIALECT)


def flagged(source: str, columns: Sequence[Filled], where: exp.Condition | None = None) -> str:
    """The rows the rewrite moves out of the table ``source`` (``select``), each with, per column whose conversion may
    lose values, whether it made its value NULL (``LOST``); with ``where``, only those of the partitions it selects."""
    query = exp.select(*(exp.alias_(_value(f), identifier_node(f.column)) for f in columns),
                       *(exp.alias_(_nulled(f), identifier_node(LOST + f.column)) for f in columns if f.lossy))
    query = query.from_(table_node(source))
    return (query.where(where) if where is not None else query).sql(dialect=DIALECT)


def moved(source: str, columns: Sequence[Filled], where: exp.Condition | None = None) -> exp.Expression:
    """``flagged`` as a relation to verify."""
    return exp.Subquery(this=exp.maybe_parse(flagged(source, columns, where), dialect=DIALECT),
                        alias=exp.TableAlias(this=identifier_node(MOVED)))


def stored(key: str, where: exp.Condition | None = None) -> exp.Expression:
    """The rows the table ``key`` holds (with ``where``, of the partitions it selects), as a relation to verify."""
    if where is None:
        return table_node(key)
    return exp.Subquery(this=exp.select(exp.Star()).from_(table_node(key)).where(where),
                        alias=exp.TableAlias(this=identifier_node(STORED)))


def in_slices(columns: Sequence[Filled], count: int, numbers: Sequence[int]) -> exp.Condition:
    """The condition that selects, among the rows the rewrite moves (``flagged``, its columns ``columns``), those of
    slices ``numbers`` of ``count``: ``pmod(<the row's hash, as its checksum hashes it>, count) IN (numbers)``, a
    function of the row's values alone (``catalog.hive.rewrite_rounds``)."""
    slice_ = exp.Anonymous(this="pmod", expressions=[_row_hash(columns), exp.Literal.number(count)])
    return exp.In(this=slice_, expressions=[exp.Literal.number(n) for n in numbers])


def within(keys: Sequence[tuple[str, str]], partitions: Sequence[Sequence[str | None]]) -> exp.Condition:
    """The condition that selects the ``partitions`` (each the text of its values, None for NULL, as the metastore
    lists them) of a table partitioned by ``keys`` (each a name and a type): one ``IN`` list for a single column,
    else one conjunction per partition. A value is converted to its column's type, as Spark's partition pruning
    compares it."""
    def value(text: str | None, type_: str) -> exp.Expression:
        literal = exp.Literal.string(text or "")
        return literal if type_ == "string" else exp.Cast(this=literal, to=exp.DataType.build(type_, dialect=DIALECT))

    def equal(name: str, type_: str, text: str | None) -> exp.Expression:
        column = exp.column(identifier_node(name))
        return exp.Is(this=column, expression=exp.Null()) if text is None else exp.EQ(this=column,
                                                                                         expression=value(text, type_))

    if len(keys) == 1:
        (name, type_), texts = keys[0], [p[0] for p in partitions]
        listed = [value(t, type_) for t in texts if t is not None]
        among: list[exp.Expression] = [exp.In(this=exp.column(identifier_node(name)), expressions=listed)] if listed else []
        return exp.or_(*among, *(equal(name, type_, None) for t in texts if t is None))
    return exp.or_(*(exp.and_(*(equal(n, t, v) for (n, t), v in zip(keys, p, strict=True))) for p in partitions))
