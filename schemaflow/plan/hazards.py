"""What a column change does to the data already in a table's files, by storage format.

A column change is metadata only: the files keep what they hold, and what readers then see
depends on how the format finds a column. Measured with Spark 4.0 (the tests re-prove each claim
by writing rows, changing the columns and reading them back):

- Parquet, ORC and Avro resolve columns by name: after a rename the old data reads NULL; a
  reorder or a dropped column is harmless; a name dropped or renamed away and declared again shows
  the old values of that name.
- Text, SequenceFile and RCFile resolve columns by position: a rename is harmless, but a reorder,
  or a drop of a column whose place another column takes, shows existing values under the wrong
  columns.
- A type change that the metastore allows is read from ORC and text files; Parquet and Avro
  readers convert only some types, and a query over older files fails for the rest. A decimal made
  narrower (a decimal place or an integer digit fewer) reads rounded, or NULL where it no longer fits,
  wherever it is read; Spark 4's Parquet reader refuses it. Spark 3.5's
  Parquet reader converts none: it reads only a change that keeps the type the files store values as
  (measured with pyspark 3.5.9: tinyint to smallint or int, all 32-bit integers in the files; a
  decimal's precision raised at the same scale while its values keep their width, up to 9 digits in 32
  bits and 18 in 64). Spark 4 reads every widening, int to bigint, to decimal or to double included.
- Partitions left with their old column list (``restrict``) are read by Spark through the table's
  columns anyway; Hive reads each partition with its own list.

Each format's part of this (how it finds columns, which type changes it reads) is a trait of its
``TableKind`` (``sql.table_kinds``).

A rewrite (``plan.rewrite``) moves the rows instead, and what its copy does to values and readers is known when it
is planned (``rewrite_hazards``), each with the way through where a project can declare one: a conversion that cannot
hold every value, and ``''`` in a new partition column of text (Spark writes it as the default partition, which reads
NULL), each make values NULL, which stops the rewrite before its cut-over unless a migration accepts the loss in that
column (``accept_loss``); Spark reports the new table's column names as declared, in lower case, where its copy of
the old schema spelt capitals; and the cut-over moves the table's folder with its backup.
"""
from __future__ import annotations

from collections.abc import Sequence

from schemaflow.model import HIVE_DEFAULT_PARTITION, Table
from schemaflow.plan.evolution import Evolution
from schemaflow.spark_version import SparkVersion, spark_name, spark_version
from schemaflow.sql.table_kinds import Resolution, TableKind, table_kind
from schemaflow.sql.rewrite import Filled, empty_partition_values
from schemaflow.sql.types import decimal_digits
from schemaflow.wording import plural

_INTEGERS = ("tinyint", "smallint", "int", "bigint")
_INT32 = ("tinyint", "smallint", "int")
# The most digits of a decimal stored in 32 and in 64 bits (Spark's Parquet writer); more take bytes.
_DECIMAL_WIDTHS = (9, 18)


def readable(kind: TableKind, old: str, new: str, release: SparkVersion) -> bool:
    """Whether Spark ``release`` reads values written as ``old`` once the column is ``new``, as measured."""
    if kind.reads_every_type_change:
        return True
    old_base, new_base = old.split("(")[0], new.split("(")[0]
    if release < kind.widens_since:
        return _keeps_stored_type(old, new)
    widening = old_base in _INTEGERS and new_base in _INTEGERS and _INTEGERS.index(old_base) < _INTEGERS.index(new_base)
    if (old_base, new_base) in kind.reads_type_changes:
        return True
    if (old_base, new_base) == ("decimal", "decimal"):  # Spark 4's Parquet reader refuses a narrowed one
        return not narrows(old, new)
    return widening or (old_base, new_base) in {("float", "double"), ("int", "double")}


def narrows(old: str, new: str) -> bool:
    """Whether a decimal of type ``old`` becoming ``new`` loses a decimal place or an integer digit. Readers that
    convert it (Spark's of ORC, Avro and text files, measured with Spark 4.3) round what the files hold to the new
    scale and read NULL for a value with more integer digits than it holds; Spark 4's Parquet reader refuses it."""
    before, after = decimal_digits(old), decimal_digits(new)
    if before is None or after is None:
        return False
    return after[1] < before[1] or after[0] - after[1] < before[0] - before[1]


def _keeps_stored_type(old: str, new: str) -> bool:
    """Whether Parquet files keep storing values of ``new`` as they stored those of ``old``."""
    if old.split("(")[0] in _INT32 and new.split("(")[0] in _INT32:
        return _INT32.index(old.split("(")[0]) <= _INT32.index(new.split("(")[0])
    before, after = decimal_digits(old), decimal_digits(new)
    if before is None or after is None:
        return False

    def width(precision: int) -> int:
        return sum(precision > most for most in _DECIMAL_WIDTHS)
    return before[1] == after[1] and before[0] <= after[0] and width(before[0]) == width(after[0])


# What a hazard of values hidden by a change in place offers instead (see plan.diff).
OFFER = "declare 'rewrite: when_values_hide' on the table"


def unexplained_hazards(evolution: Evolution) -> tuple[str, ...]:
    """A hazard for each migration change that names a column the table neither has nor declares: the plan
    cannot tell a column schemas/ added since the last apply from a misspelt one, and apply records it as done."""
    return tuple(f"{problem.what}: unless schemas/ added it since the table was last applied, the migration names a "
                 f"column that never existed, and apply records it as done; {problem.way_out}"
                 for problem in evolution.unexplained)


def hidden_by_renames(evolution: Evolution, format: str) -> tuple[tuple[str, str], ...]:
    """The renames of ``evolution`` (old, new) that hide existing values in a Hive-format table stored as
    ``format``: its files find columns by name, so the new name reads NULL where the rows were written before."""
    kind = table_kind(format)
    if kind is None or kind.resolution is not Resolution.BY_NAME:
        return ()
    returning = set(evolution.returning)
    return tuple((old, new) for old, new in evolution.renamed if new not in returning)


def column_hazards(evolution: Evolution, format: str, release: SparkVersion | None = None) -> tuple[str, ...]:
    """The hazards of ``evolution`` to existing data in a Hive-format table stored as ``format``, read by
    Spark ``release`` (the installed pyspark's unless given)."""
    release = release or spark_version()
    kind = table_kind(format)
    assert kind is not None  # the columns altered are a declared table's, of a format schemaflow knows
    by_name, by_position = kind.resolution is Resolution.BY_NAME, kind.resolution is Resolution.BY_POSITION
    hazards = list(unexplained_hazards(evolution))
    returning = set(evolution.returning)
    hazards += [f"rename {old} -> {new}: {format} files find columns by name, so {new} reads NULL "
                f"in existing data ({OFFER} to copy them under the new name)"
                for old, new in hidden_by_renames(evolution, format)]
    if by_name:
        hazards += [f"{name} is declared again after a migration took it away: {format} files find columns by "
                    f"name, so {name} shows the old {name} values in existing data" for name in evolution.returning]
    live_names = [c.name for c in evolution.old]
    for column in evolution.dropped:
        # By position, every column from the dropped one's place on reads what the files hold there.
        if by_position and live_names.index(column) < len(evolution.new):
            hazards.append(f"drop {column}: {format} files are read by position, so in existing rows the "
                           "columns after it show the wrong values")
        elif not (by_name and column in returning):
            hazards.append(f"drop {column}: its values stay in the files but no reader sees them")
    if evolution.reordered and by_position:
        hazards.append(f"reorder: {format} files are read by position, so existing rows show values "
                       "under the wrong columns")
    reader = "Spark" if release >= kind.widens_since else spark_name(release)
    hazards += [f"type {column} {old} -> {new}: {reader} cannot read existing {format} files as {new}; "
                f"queries over them fail" for column, old, new in evolution.retyped
                if not readable(kind, old, new, release)]
    hazards += [f"type {column} {old} -> {new}: existing values read rounded to {new}'s scale, and NULL where they "
                f"have more integer digits than {new} holds" for column, old, new in evolution.retyped
                if narrows(old, new) and readable(kind, old, new, release)]
    return tuple(hazards)


def restrict_hazard(partition_count: int | None) -> str:
    return (f"restrict: {keep(partition_count, 'existing partitions')} old column list; Spark reads them through the "
            "table's columns, Hive reads each with its own list (old names and types)")


def appended_note(partition_count: int | None) -> str:
    """What an append (Hive's prefix rule: partitions never need rewriting for it) leaves the partitions."""
    return f"table only: {keep(partition_count)} old column list (safe: appended columns read as NULL there)"


def keep(partitions: int | None, unknown: str = "an unknown number of existing partitions") -> str:
    """``1 partition keeps its``, ``30 partitions keep their``: the count, and the verb and pronoun that agree with
    it (``unknown`` where the count is not known)."""
    if partitions is None:
        return f"{unknown} keep their"
    return f"{plural(partitions, 'partition')} {'keeps its' if partitions == 1 else 'keep their'}"



def rewrite_hazards(key: str, want: Table, have: Table, columns: Sequence[Filled], backup: str,
                    staging: str) -> tuple[str, ...]:
    """What the copy of a rewrite of ``key`` (the live ``have`` made anew as ``want``, each column filled as
    ``columns`` say, then swapped in with ``have`` kept as ``backup``) does to values and to readers."""
    hazards = [f"{f.column}: {f.old_type} -> {f.type} can lose values (a value {f.type} cannot hold becomes NULL, "
               + ("as a migration accepts: the copy counts them)" if f.accepts_loss else
                  f"and then the rewrite stops before the cut-over; {_accepting(key, f.column)} makes them NULL as "
                  "intended)") for f in columns if f.lossy]
    for f in empty_partition_values(want, have, columns):
        reads = f"the partition Spark writes it in ({f.column}={HIVE_DEFAULT_PARTITION}) reads NULL"
        hazards.append(f"{f.column}: a row whose {f.column} is '' is copied with {f.column} NULL, as a migration "
                       f"accepts ({reads})" if f.empty_as_null else
                       f"{f.column}: a row whose {f.column} is '' cannot be copied as it is: {reads}, and then the "
                       f"rewrite stops before the cut-over; {_accepting(key, f.column)} copies it as NULL")
    spelt = {name.lower(): name for name in have.spelt}
    recased = [f"{spelt[f.column]} as {f.column}" for f in columns if f.source == f.column and f.column in spelt]
    if recased:
        hazards.append(f"column names: Spark reports {', '.join(recased)} from the cut-over on (the new table has the "
                       "declared names, in lower case): SQL finds either, but what matches names exactly (a DataFrame's "
                       "rows in Python, a schema compared as text) sees them change")
    hazards.append(f"cut-over: the old files move with {key} into the folder of {backup}, and those of {staging} into "
                   f"the folder of {key}: what reads that folder by path reads the new files from then on, and what "
                   "names the old files themselves (an Iceberg snapshot table of them, a saved list of paths) no longer "
                   "finds them")
    return tuple(hazards)


def _accepting(key: str, column: str) -> str:
    """The migration change that accepts the loss of values in ``column`` of the table ``key``."""
    return f"a migration with accept_loss: {{table: {key}, column: {column}}}"
