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
- A type change that the metastore allows is read fine from ORC and text files; Parquet and Avro
  readers convert only some types, and a query over older files fails for the rest.
- Partitions left with their old column list (``restrict``) are read by Spark through the table's
  columns anyway; Hive reads each partition with its own list.
"""
from __future__ import annotations

from schemaflow.plan.evolution import Evolution
from schemaflow.wording import plural

BY_NAME = frozenset({"parquet", "orc", "avro"})
BY_POSITION = frozenset({"textfile", "sequencefile", "rcfile"})
# Formats whose reader converts every type change the metastore allows.
CONVERTING = frozenset({"orc"}) | BY_POSITION
_INTEGERS = ("tinyint", "smallint", "int", "bigint")


def _readable(format: str, old: str, new: str) -> bool:
    """Whether Spark reads values written as ``old`` once the column is ``new``, as measured."""
    if format in CONVERTING:
        return True
    old_base, new_base = old.split("(")[0], new.split("(")[0]
    widening = old_base in _INTEGERS and new_base in _INTEGERS and _INTEGERS.index(old_base) < _INTEGERS.index(new_base)
    if widening or (old_base, new_base) in {("decimal", "decimal"), ("float", "double"), ("int", "double")}:
        return True
    if format == "parquet":
        return old_base in _INTEGERS and new_base == "decimal"
    if format == "avro":
        return (old_base, new_base) in {("int", "float"), ("bigint", "double")}
    return False


def column_hazards(evolution: Evolution, format: str) -> tuple[str, ...]:
    """The hazards of ``evolution`` to existing data in a table stored as ``format``."""
    hazards = []
    returning = set(evolution.returning)
    if format in BY_NAME:
        hazards += [f"rename {old} -> {new}: {format} files find columns by name, so {new} reads NULL "
                    f"in existing data" for old, new in evolution.renamed if new not in returning]
        hazards += [f"{name} is declared again after a migration took it away: {format} files find columns by "
                    f"name, so {name} shows the old {name} values in existing data" for name in evolution.returning]
    live_names = [c.name for c in evolution.old]
    for column in evolution.dropped:
        # By position, every column from the dropped one's place on reads what the files hold there.
        if format in BY_POSITION and live_names.index(column) < len(evolution.new):
            hazards.append(f"drop {column}: {format} files are read by position, so in existing rows the "
                           "columns after it show the wrong values")
        elif not (format in BY_NAME and column in returning):
            hazards.append(f"drop {column}: its values stay in the files but no reader sees them")
    if evolution.reordered and format in BY_POSITION:
        hazards.append(f"reorder: {format} files are read by position, so existing rows show values "
                       "under the wrong columns")
    hazards += [f"type {column} {old} -> {new}: Spark cannot read existing {format} files as {new}; "
                f"queries over them fail" for column, old, new in evolution.retyped if not _readable(format, old, new)]
    return tuple(hazards)


def restrict_hazard(partition_count: int | None) -> str:
    count = "existing partitions keep" if partition_count is None else keep(partition_count)
    return (f"restrict: {count} their old column list; Spark reads them through the table's columns, "
            "Hive reads each with its own list (old names and types)")


def keep(partitions: int) -> str:
    """``1 partition keeps``, ``30 partitions keep``: the count and the verb that agrees with it."""
    return f"{plural(partitions, 'partition')} {'keeps' if partitions == 1 else 'keep'}"
