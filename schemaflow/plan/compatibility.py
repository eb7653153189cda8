"""The metastore's rule for column type changes, checked at plan time instead of failing mid-apply.

With ``hive.metastore.disallow.incompatible.col.type.changes`` (on by default), the Hive 2.3
metastore compares the old and new column lists of a table position by position and refuses the
alter when a type cannot be implicitly converted. So dropping a middle column fails whenever the
columns that shift into its place have other types. Implicit conversions, as in Hive's
``TypeInfoUtils.implicitConvertible``:

- the same type, or the same base type with other parameters (``decimal(10,2)`` to ``decimal(5,1)``);
- numbers widening along tinyint < smallint < int < bigint < decimal < float < double < string;
- any number, date or timestamp to a string type; string types to each other and to double
  (not to decimal: the real metastore refuses it, checked pair by pair in the tests);
- nothing into or out of a complex type (array, map, struct) unless the type is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

from schemaflow.model import TYPE_RULE, Column, column_type

WIDENING = ("tinyint", "smallint", "int", "bigint", "decimal", "float", "double", "string")
_RANK = {name: rank for rank, name in enumerate(WIDENING)}
STRING_GROUP = frozenset({"string", "varchar", "char"})
DATE_GROUP = frozenset({"date", "timestamp"})
NUMERIC = frozenset(WIDENING) - {"string"}


def _base(type_: str) -> str:
    return type_.split("(", 1)[0]


def compatible(old: str, new: str) -> bool:
    """Whether the metastore accepts a column of type ``old`` becoming ``new``."""
    if old == new:
        return True
    if "<" in old or "<" in new:
        return False
    old_base, new_base = _base(old), _base(new)
    if old_base == new_base:
        return True
    if old_base in STRING_GROUP and (new_base in STRING_GROUP or new_base == "double"):
        return True
    if (old_base in NUMERIC or old_base in DATE_GROUP) and new_base in STRING_GROUP:
        return True
    return old_base in _RANK and new_base in _RANK and _RANK[old_base] <= _RANK[new_base]


@dataclass(frozen=True)
class Incompatibility:
    position: int          # 1-based
    old: Column
    new: Column

    def describe(self) -> str:
        if self.old.name == self.new.name:
            what = f"column {self.new.name} cannot change from {self.old.type} to {self.new.type}"
        else:
            what = (f"position {self.position} would change from {self.old.name} {self.old.type} "
                    f"to {self.new.name} {self.new.type}")
        return f"{what}: the metastore compares types position by position and refuses that ({TYPE_RULE})"


def incompatibilities(old: Sequence[Column], new: Sequence[Column]) -> list[Incompatibility]:
    """Every position where the metastore would refuse the change from ``old`` to ``new`` columns."""
    return [Incompatibility(i, o, n) for i, (o, n) in enumerate(zip(old, new, strict=False), 1)
            if not compatible(column_type(o), column_type(n))]
