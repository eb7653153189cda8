"""The reader rules, one registration each, and what each kind of step tells them (``events``).

A rule is a ``plan.readers.Rule``: the change it judges, its source, and a verdict for each reader it speaks of.
The facts about Spark are ``plan.hazards``' and the table kinds' (``sql.table_kinds``), reused, never restated;
those about engines not on this machine (Trino) cite their documentation. Each rule has a fast test and, where the
engine is here, a test that makes the change and reads it back through the engine (tests/test_reader_rules*.py).

To add a rule: write its ``judge``, ``register`` a ``Rule`` with its source and examples, and add its tests; the
matrix page (docs/reference/readers.md, ``python docs/hooks.py``) then shows it. A change no event names yet
becomes a member of ``ChangeKind`` and a case of ``events``.

Types some engines lack (``UNDECLARABLE``: ``timestamp_ntz``, ``variant``, nanosecond timestamps) need no rule: no
table file may declare them (``sql.types`` refuses them), so no plan brings one into a table. A Delta table's reader
feature for them (``delta.feature.timestampNtz``, ``delta.feature.variantType``) is a protocol raise, judged as one.
"""
from __future__ import annotations

from collections.abc import Mapping

from schemaflow.plan.changes import AlterColumns, Change
from schemaflow.plan.delta import MAPPING, READER, WIDENING, DeltaProtocol
from schemaflow.plan.hazards import narrows, readable
from schemaflow.plan.iceberg import AlterIcebergTable
from schemaflow.plan.readers import (Barrier, Cannot, ChangeKind, Differs, Difference, Engine, Event, Reader, Rule,
                                     Same, Verdict, register)
from schemaflow.spark_version import SparkVersion, parse_release, spark_version
from schemaflow.spec.delta import FEATURE
from schemaflow.sql.table_kinds import DELTA, ICEBERG, Resolution, table_kind

TRINO_HIVE = ("https://trino.io/docs/current/connector/hive.html (hive.parquet.use-column-names, default true; "
              "hive.orc.use-column-names, default false)")
HIVE_COLUMNS = ("https://issues.apache.org/jira/browse/HIVE-6938 (parquet.column.index.access, default false), "
                "https://orc.apache.org/docs/core-java-config.html (orc.force.positional.evolution, default false); "
                "measured through Hive 2.3's Parquet and ORC readers (tests/test_reader_rules_spark.py)")
ICEBERG_EVOLUTION = ("https://iceberg.apache.org/spec/#schema-evolution; measured on Iceberg's REST server, read back "
                     "through pyiceberg (tests/test_reader_rules_remote.py), and int -> bigint read back through "
                     "Iceberg's Java library in Spark 3.5.9 with its runtime 1.12.0 (tests/test_iceberg_engine_remote.py)")
DELTA_FEATURES = "https://github.com/delta-io/delta/blob/master/PROTOCOL.md#table-features"
SPARK_HAZARDS = ("schemaflow.plan.hazards, measured with pyspark 3.5.9 and 4.x (tests/test_columns_spark.py, "
                 "tests/test_reader_rules_spark.py)")
# The table features a Delta reader must have to read a table that lists them (reader features: Delta's PROTOCOL.md,
# "Valid Feature Names in Table Features"); the others stop writers only.
READER_FEATURES = frozenset({"columnMapping", "deletionVectors", "timestampNtz", "typeWidening", "typeWidening-preview",
                             "v2Checkpoint", "vacuumProtocolCheck", "variantType", "variantType-preview"})
DELTALAKE_MEASURED = ("deltalake (delta-rs) 1.6.6, measured: it reads a table of reader version 3 whose reader features it has "
             "and refuses the others (tests/test_reader_rules.py); it reads a column-mapped table of reader version 2 "
             "by the names in the files, a renamed column NULL (tests/test_reader_rules_delta.py, through delta-spark "
             "3.3.2)")
# The types some engines lack that no table file may declare (``sql.types.canonical_type`` refuses each): Spark's
# timestamp without time zone (3.4 on) and variant (4.0 on), and Iceberg's nanosecond timestamp (format version 3,
# which schemaflow does not write: ``spec.iceberg.WRITTEN_VERSIONS``). The matrix page says so.
UNDECLARABLE = ("timestamp_ntz", "variant", "timestamp_ns")


def finds(reader: Reader, format: str) -> Resolution | None:
    """How ``reader`` finds a column in the files of a Hive-format table stored as ``format`` (None: it does not read
    such tables, or nothing is known). Files that keep no names (text, SequenceFile, RCFile) are read by position by
    every engine; Parquet, ORC and Avro by name by Spark, by Hive unless it is set to read by position
    (``parquet.column.index.access``), and by Trino as its settings say, whose defaults differ: Parquet by name
    (``hive.parquet.use-column-names``, true), ORC by position (``hive.orc.use-column-names``, false)."""
    kind = table_kind(format)
    if kind is None or kind.resolution not in (Resolution.BY_NAME, Resolution.BY_POSITION):
        return None
    if kind.resolution is Resolution.BY_POSITION:
        return Resolution.BY_POSITION if reader.engine in (Engine.SPARK, Engine.HIVE, Engine.TRINO) else None
    match reader.engine:
        case Engine.SPARK:
            return Resolution.BY_NAME
        case Engine.HIVE:
            return Resolution.BY_NAME if format == "avro" else reader.columns or Resolution.BY_NAME
        case Engine.TRINO:
            if format == "avro":
                return Resolution.BY_NAME
            return reader.columns or (Resolution.BY_POSITION if format == "orc" else Resolution.BY_NAME)
        case Engine.ICEBERG_JAVA | Engine.PYICEBERG | Engine.DELTA:
            return None


def _rename(event: Event, reader: Reader) -> Verdict | None:
    match finds(reader, event.format):
        case Resolution.BY_NAME:
            return Differs(Difference.NULLS, f"{event.new} reads NULL in rows written before (the files name it "
                                             f"{event.old})")
        case Resolution.BY_POSITION:
            return Same()
        case _:
            return None


def _shift(event: Event, reader: Reader) -> Verdict | None:
    found = finds(reader, event.format)
    if found is None:
        return None
    if found is Resolution.BY_POSITION and (event.kind is ChangeKind.REORDER or event.shifts):
        return Differs(Difference.OTHER_COLUMN, "rows written before show values under the wrong columns (the "
                                                "files are read by position)")
    return Same()


def _widening(event: Event, reader: Reader) -> Verdict | None:
    kind = table_kind(event.format)
    if (reader.engine is not Engine.SPARK or reader.version is None or kind is None
            or kind.resolution is Resolution.NOT_ASSUMED):  # a custom table's classes: nothing is assumed
        return None
    if readable(kind, event.old, event.new, parse_release(reader.version)):
        return Differs(Difference.LOST_PRECISION, f"existing values read rounded to {event.new}'s scale, and NULL "
                                                  "where they no longer fit") if narrows(event.old, event.new) else Same()
    return Cannot(Barrier.TYPE, f"cannot read existing {event.format} files as {event.new}: queries over them fail")


def _promotion(event: Event, reader: Reader) -> Verdict | None:
    # Iceberg readers promote a value as they read it by field id; the promotions a plan makes are the spec's.
    if event.format != ICEBERG or reader.engine not in (Engine.SPARK, Engine.ICEBERG_JAVA, Engine.PYICEBERG):
        return None
    return Same()


def _protocol(event: Event, reader: Reader) -> Verdict | None:
    if event.format != DELTA or reader.engine is not Engine.DELTA or reader.protocol is None:
        return None
    if reader.protocol < event.protocol:
        return Cannot(Barrier.PROTOCOL, f"the table needs reader protocol {event.protocol}, the reader speaks "
                                        f"{reader.protocol}")
    if event.feature and reader.protocol >= 3 and event.feature not in reader.features:
        if event.protocol < 3:  # column mapping at reader version 2: no feature listed that the reader would refuse
            return Differs(Difference.NULLS, "it reads columns by the names in the files, not by the mapping: a "
                                             "column renamed reads NULL")
        return Cannot(Barrier.FEATURE, f"the table needs the reader feature {event.feature}")
    return Same()


HIVE_RENAME = register(Rule(
    "hive-rename", "Rename a column of a Hive-format table", ChangeKind.RENAME,
    f"{SPARK_HAZARDS}; Hive: {HIVE_COLUMNS}; Trino: {TRINO_HIVE}", _rename,
    (Event(ChangeKind.RENAME, "parquet", old="amount", new="total"),
     Event(ChangeKind.RENAME, "orc", old="amount", new="total"),
     Event(ChangeKind.RENAME, "textfile", old="amount", new="total"))))
HIVE_REORDER = register(Rule(
    "hive-reorder", "Reorder the columns of a Hive-format table", ChangeKind.REORDER,
    f"{SPARK_HAZARDS}; Hive: {HIVE_COLUMNS}; Trino: {TRINO_HIVE}", _shift,
    (Event(ChangeKind.REORDER, "parquet"), Event(ChangeKind.REORDER, "orc"), Event(ChangeKind.REORDER, "textfile"))))
HIVE_DROP = register(Rule(
    "hive-drop", "Drop a column of a Hive-format table, other columns after it", ChangeKind.DROP,
    f"{SPARK_HAZARDS}; Hive: {HIVE_COLUMNS}; Trino: {TRINO_HIVE}", _shift,
    (Event(ChangeKind.DROP, "parquet", column="note", shifts=True),
     Event(ChangeKind.DROP, "textfile", column="note", shifts=True))))
PARQUET_WIDENING = register(Rule(
    "spark-type-change", "Change a column's type in a Hive-format table (Spark's readers)", ChangeKind.RETYPE,
    SPARK_HAZARDS, _widening,
    (Event(ChangeKind.RETYPE, "parquet", column="n", old="int", new="bigint"),
     Event(ChangeKind.RETYPE, "parquet", column="n", old="tinyint", new="int"),
     Event(ChangeKind.RETYPE, "parquet", column="n", old="int", new="string"),
     Event(ChangeKind.RETYPE, "orc", column="n", old="int", new="bigint"),
     Event(ChangeKind.RETYPE, "parquet", column="d", old="decimal(10,2)", new="decimal(5,1)"),
     Event(ChangeKind.RETYPE, "orc", column="d", old="decimal(10,2)", new="decimal(5,1)"))))
ICEBERG_PROMOTION = register(Rule(
    "iceberg-promotion", "Promote a column's type in an Iceberg table", ChangeKind.RETYPE, ICEBERG_EVOLUTION,
    _promotion, (Event(ChangeKind.RETYPE, ICEBERG, column="n", old="int", new="bigint"),
                 Event(ChangeKind.RETYPE, ICEBERG, column="x", old="float", new="double"))))
DELTA_PROTOCOL = register(Rule(
    "delta-protocol", "Raise a Delta table's protocol (column mapping, type widening, a reader feature)",
    ChangeKind.PROTOCOL, f"{DELTA_FEATURES}; {DELTALAKE_MEASURED}", _protocol,
    (Event(ChangeKind.PROTOCOL, DELTA, protocol=2, feature="columnMapping"),
     Event(ChangeKind.PROTOCOL, DELTA, protocol=3, feature="typeWidening-preview"),
     Event(ChangeKind.PROTOCOL, DELTA, protocol=3, feature="typeWidening"),
     Event(ChangeKind.PROTOCOL, DELTA, protocol=3, feature="variantType"))))


def events(change: Change, release: SparkVersion | None = None) -> tuple[Event, ...]:
    """What ``change`` does that the rules judge (nothing, for a change none of them speaks of), applied with the Spark
    ``release`` (None: the installed pyspark's)."""
    if isinstance(change, AlterColumns):
        evolution, format = change.evolution, change.format
        # A name declared again after a migration took it away shows its old values: not a rename's verdict.
        found = [Event(ChangeKind.RENAME, format, old=old, new=new) for old, new in evolution.renamed
                 if new not in evolution.returning]
        if evolution.reordered:
            found.append(Event(ChangeKind.REORDER, format))
        live = [c.name for c in evolution.old]
        found += [Event(ChangeKind.DROP, format, column=name, shifts=live.index(name) < len(evolution.new))
                  for name in evolution.dropped]
        found += [Event(ChangeKind.RETYPE, format, column=name, old=old, new=new)
                  for name, old, new in evolution.retyped]
        return tuple(found)
    if isinstance(change, AlterIcebergTable):
        return tuple(Event(ChangeKind.RETYPE, ICEBERG, column=name, old=old, new=new)
                     for name, old, new in change.evolution.retyped)
    if isinstance(change, DeltaProtocol):
        return _protocol_events(change.set, release or spark_version())
    return ()


def _protocol_events(settings: Mapping[str, str], release: SparkVersion) -> tuple[Event, ...]:
    """What a Delta protocol step asks of readers: column mapping reader 2 (or 3 and its feature), type widening reader
    3 and its feature (``typeWidening-preview`` as Delta 3.2 and 3.3 on Spark 3.5 write it, ``typeWidening`` as Delta 4
    on Spark 4 does: measured through delta-spark 3.3.2), each reader feature turned on by name reader 3 and it, a
    reader version raised by name that version where no feature above needs it already."""
    found = []
    if settings.get(MAPPING) in ("name", "id"):  # a reader of protocol 3 must list it, one of 2 has it by its version
        found.append(Event(ChangeKind.PROTOCOL, DELTA, protocol=2, feature="columnMapping"))
    if settings.get(WIDENING) == "true":
        found.append(Event(ChangeKind.PROTOCOL, DELTA, protocol=3,
                           feature="typeWidening" if release >= (4, 0) else "typeWidening-preview"))
    found += [Event(ChangeKind.PROTOCOL, DELTA, protocol=3, feature=key[len(FEATURE):]) for key in sorted(settings)
              if key.startswith(FEATURE) and key[len(FEATURE):] in READER_FEATURES]
    if READER in settings and settings[READER].isdigit() and all(e.protocol < int(settings[READER]) for e in found):
        found.append(Event(ChangeKind.PROTOCOL, DELTA, protocol=int(settings[READER])))
    return tuple(found)
