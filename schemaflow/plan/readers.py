"""The reader-compatibility gate: which readers of a table still read it as before once a step has run.

A warehouse is read by more than the Spark that applies its changes: an older Spark, Hive, Trino, Iceberg's Java
library or pyiceberg, Delta readers of some protocol. ``schemaflow.yaml`` declares them (``readers:``, each a
``Reader``; a reader that names ``databases`` or ``tables`` reads those alone), and the Spark release the plan is
made for reads every table whether declared or not (``plan_readers``; without ``readers:``, it is the only one).
Each step that changes a table carries, for each reader a rule speaks of, a ``Verdict``: ``Same`` (reads it as
before), ``Differs`` (reads it, with a named difference: NULLs, another column's values, lost precision) or ``Cannot``
(cannot read it: protocol, type, feature). A step with a verdict other than ``Same`` is blocked unless the plan
allows destructive changes (``--allow-destructive``, in a pull request its label), as a change that hides values
already is. For the Spark the plan is made for, each break a verdict names is a hazard the step states
(``plan.hazards``: a rename in files found by name, a shift in files read by position, a type the files cannot be
read as, a decimal narrowed), so the two never contradict, and the verdict is what blocks it.

The facts are rules, one registration each (``register``), in ``plan.reader_rules``: a rule names the change it
judges (an ``Event``, what a step does to a table's columns or protocol), where its facts come from (``source``),
and its verdict for each reader it speaks of (None: it says nothing of that reader). A reader no rule speaks of
gets no verdict: the matrix page (docs/reference/readers.md, generated from the registry) shows what is known.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, assert_never

from schemaflow.spark_version import SparkVersion, release_text
from schemaflow.sql.table_kinds import Resolution

# Why a step with a verdict other than Same does not run, and what allows it.
READER_BLOCK = ("breaks a reader of the table: plan with --allow-destructive (in a pull request, the "
                "schemaflow-allow-destructive label) to allow it, or change what the readers: setting declares")


class Engine(StrEnum):
    """The engines a reader may be: an allow-list (``readers:`` names one of these, or is refused)."""

    SPARK = "spark"
    HIVE = "hive"
    TRINO = "trino"
    ICEBERG_JAVA = "iceberg-java"
    PYICEBERG = "pyiceberg"
    DELTA = "delta"

    @property
    def display(self) -> str:
        match self:
            case Engine.SPARK:
                return "Spark"
            case Engine.HIVE:
                return "Hive"
            case Engine.TRINO:
                return "Trino"
            case Engine.ICEBERG_JAVA:
                return "Iceberg Java"
            case Engine.PYICEBERG:
                return "pyiceberg"
            case Engine.DELTA:
                return "Delta reader"
            case _:
                assert_never(self)


# How ``columns:`` spells a reader's way of finding a column in Parquet and ORC files (Hive, Trino).
COLUMNS = {"by_name": Resolution.BY_NAME, "by_position": Resolution.BY_POSITION}


@dataclass(frozen=True)
class Reader:
    """One engine that reads a warehouse's tables: its release (``version``: "3.5"), how it finds columns in
    Parquet and ORC files where that is a setting (``columns``: Hive's ``parquet.column.index.access``, Trino's
    ``hive.parquet.use-column-names`` / ``hive.orc.use-column-names``; None: the engine's default), for a Delta reader
    its protocol (``protocol``: its reader version, ``features``: the reader table features it has), and what it
    reads: the tables of ``databases`` and the ``tables`` (database.table), both in lower case (both empty: all)."""

    engine: Engine
    version: str | None = None
    columns: Resolution | None = None
    protocol: int | None = None
    features: tuple[str, ...] = ()
    databases: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``Spark 3.5``, ``Trino (by position)``, ``Delta reader 2 (typeWidening)``: how a plan names it."""
        text = self.engine.display
        if self.version:
            text += f" {self.version}"
        if self.protocol is not None:
            text += f" {self.protocol}"
        if self.features:
            text += f" ({', '.join(self.features)})"
        if self.columns is not None:
            text += f" ({self.columns.value})"
        return text

    def reads(self, key: str) -> bool:
        """Whether it reads the table ``key`` (database.table)."""
        key = key.lower()
        if not self.databases and not self.tables:
            return True
        return key in self.tables or key.partition(".")[0] in self.databases

    @classmethod
    def from_setting(cls, data: Mapping[str, Any]) -> Reader:
        """A reader as ``readers:`` declares it, its shape already checked by the settings' JSON Schema."""
        columns = data.get("columns")
        return cls(Engine(data["engine"]), str(data["version"]) if data.get("version") is not None else None,
                   COLUMNS[columns] if columns else None, data.get("reader"),
                   tuple(sorted(data.get("features") or ())),
                   _lowered(data.get("databases")), _lowered(data.get("tables")))


def _lowered(names: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(sorted({str(name).lower() for name in names or ()}))


def declared_readers(setting: Sequence[Mapping[str, Any]] | None) -> tuple[Reader, ...] | None:
    """The readers ``readers:`` declares, in the order written; None where it declares none."""
    if setting is None:
        return None
    return tuple(Reader.from_setting(entry) for entry in setting)


def plan_readers(declared: Sequence[Reader] | None, release: SparkVersion) -> tuple[Reader, ...]:
    """The readers a plan judges its steps for: the Spark ``release`` it is made for, which reads every table (it
    applies them), then the ``declared`` ones other than it (a declared one of its release reads no more than it)."""
    spark = Reader(Engine.SPARK, release_text(release))
    return (spark, *(reader for reader in declared or () if reader.label != spark.label))


class Difference(StrEnum):
    """What a reader that reads a changed table reads differently."""

    NULLS = "NULLs"
    OTHER_COLUMN = "another column's values"
    LOST_PRECISION = "lost precision"


class Barrier(StrEnum):
    """Why a reader cannot read a changed table."""

    PROTOCOL = "protocol"
    TYPE = "type"
    FEATURE = "feature"


@dataclass(frozen=True)
class Same:
    """Reads it as before."""


@dataclass(frozen=True)
class Differs:
    what: Difference
    detail: str


@dataclass(frozen=True)
class Cannot:
    why: Barrier
    detail: str


Verdict = Same | Differs | Cannot


def headline(verdict: Verdict) -> str:
    """``same``, ``differs (NULLs)``, ``cannot (protocol)``: a verdict without its detail."""
    match verdict:
        case Same():
            return "same"
        case Differs(what, _):
            return f"differs ({what})"
        case Cannot(why, _):
            return f"cannot ({why})"
        case _:
            assert_never(verdict)


def describe(verdict: Verdict) -> str:
    """``same``, ``differs (NULLs): ...``, ``cannot (protocol): ...``: a verdict in one line."""
    return headline(verdict) if isinstance(verdict, Same) else f"{headline(verdict)}: {verdict.detail}"


class ChangeKind(StrEnum):
    """What a step does that a rule judges."""

    RENAME = "rename a column"
    REORDER = "reorder columns"
    DROP = "drop a column"
    RETYPE = "change a column's type"
    PROTOCOL = "raise the protocol"


@dataclass(frozen=True)
class Event:
    """One thing a step does to a table, as rules see it: its ``kind``, the table's kind (``format``: ``parquet``,
    ``iceberg``, ``delta``), the column (``old``/``new``: names for a rename, types for a type change) and, for a
    protocol raise, the reader version and the reader table feature it needs (``protocol``, ``feature``).
    ``shifts``: for a drop, whether columns after it move into its place."""

    kind: ChangeKind
    format: str
    column: str = ""
    old: str = ""
    new: str = ""
    shifts: bool = False
    protocol: int = 0
    feature: str = ""

    @property
    def what(self) -> str:
        match self.kind:
            case ChangeKind.RENAME:
                return f"rename {self.old} -> {self.new}"
            case ChangeKind.REORDER:
                return "reorder"
            case ChangeKind.DROP:
                return f"drop {self.column}"
            case ChangeKind.RETYPE:
                return f"type {self.column} {self.old} -> {self.new}"
            case ChangeKind.PROTOCOL:
                return f"reader protocol {self.protocol}" + (f", feature {self.feature}" if self.feature else "")
            case _:
                assert_never(self.kind)


@dataclass(frozen=True)
class Rule:
    """What one change does to each reader it speaks of (``judge``: None for the readers it does not), with where
    that comes from (``source``: a spec section, an engine's documentation, an issue) and the cases the matrix page
    shows (``examples``, each judged for every reader of ``MATRIX_READERS``)."""

    name: str
    title: str
    kind: ChangeKind
    source: str
    judge: Callable[[Event, Reader], Verdict | None]
    examples: tuple[Event, ...]


_RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    """Add ``rule`` to the registry (its name unique)."""
    if rule.name in _RULES:
        raise ValueError(f"a reader rule named {rule.name!r} is registered already")
    _RULES[rule.name] = rule
    return rule


def rules() -> tuple[Rule, ...]:
    """Every registered rule, in the order registered."""
    return tuple(_RULES.values())


@dataclass(frozen=True)
class ReaderVerdict:
    """A reader's verdict on one thing a step does, with the rule that gave it."""

    reader: str       # the reader's label
    what: str         # the event, in words
    verdict: Verdict
    rule: str

    @property
    def same(self) -> bool:
        return isinstance(self.verdict, Same)

    def describe(self) -> str:
        return f"{self.reader}: {self.what}: {describe(self.verdict)}"

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"reader": self.reader, "change": self.what, "rule": self.rule}
        match self.verdict:
            case Same():
                return data | {"verdict": "same"}
            case Differs(what, detail):
                return data | {"verdict": "differs", "what": str(what), "detail": detail}
            case Cannot(why, detail):
                return data | {"verdict": "cannot", "why": str(why), "detail": detail}
            case _:
                assert_never(self.verdict)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ReaderVerdict:
        verdict: Verdict
        match data["verdict"]:
            case "same":
                verdict = Same()
            case "differs":
                verdict = Differs(Difference(data["what"]), data["detail"])
            case "cannot":
                verdict = Cannot(Barrier(data["why"]), data["detail"])
            case other:
                raise ValueError(f"unknown reader verdict {other!r}")
        return cls(data["reader"], data["change"], verdict, data["rule"])


def judge(events: Sequence[Event], readers: Sequence[Reader]) -> tuple[ReaderVerdict, ...]:
    """Each reader's verdict on each event, from every rule that speaks of it, in the readers' order."""
    return tuple(ReaderVerdict(reader.label, event.what, verdict, rule.name)
                 for reader in readers for event in events for rule in _RULES.values() if rule.kind is event.kind
                 for verdict in [rule.judge(event, reader)] if verdict is not None)


def breaks(verdicts: Sequence[ReaderVerdict]) -> bool:
    """Whether any verdict is not Same: the step breaks a reader."""
    return any(not v.same for v in verdicts)


# deltalake (delta-rs) 1.6.6 as a Delta reader: reader version 3 with the reader features it reads, measured (the
# others it refuses): the tests of reader rules prove it against the installed deltalake.
DELTALAKE = Reader(Engine.DELTA, protocol=3, features=("timestampNtz", "variantType", "variantType-preview"))
# The readers the matrix page judges each rule's examples for.
MATRIX_READERS = (
    Reader(Engine.SPARK, "3.5"), Reader(Engine.SPARK, "4.0"), Reader(Engine.HIVE, "3.1"),
    Reader(Engine.HIVE, "3.1", columns=Resolution.BY_POSITION), Reader(Engine.TRINO),
    Reader(Engine.TRINO, columns=Resolution.BY_NAME), Reader(Engine.TRINO, columns=Resolution.BY_POSITION),
    Reader(Engine.ICEBERG_JAVA, "1.10"), Reader(Engine.PYICEBERG, "0.12"), Reader(Engine.DELTA, protocol=1),
    Reader(Engine.DELTA, protocol=2), Reader(Engine.DELTA, protocol=3),
    Reader(Engine.DELTA, protocol=3, features=("columnMapping", "typeWidening")), DELTALAKE,
)
