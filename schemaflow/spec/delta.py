"""What a table file says of a Delta table (``format: delta``) beyond what every table file says.

A Delta table keeps its schema, partition columns, properties and protocol in its log (``_delta_log``) and
reads and writes its data files itself, so the keys that describe a Hive table's storage or a data source's
options do not apply to it, nor Iceberg's transforms and sort order: each is refused with what to write
instead. It partitions by partition columns of its own, spelt as a Hive table's (``{name: ds, type: string}``).

Its ``delta.*`` properties are Delta's settings and protocol: only the keys Delta documents are taken
(``DeltaConfigs`` of delta-io/delta, less those Delta writes itself), each with a value Delta accepts, and a
feature is turned on as Delta spells it (``delta.feature.<name>: supported``). Generated columns and CHECK
constraints are Delta's, but a table file has no way to declare them: they are refused with the reason.
"""
from __future__ import annotations

from typing import Any

from schemaflow.errors import Problem
from schemaflow.spec.yamlpos import Document

# Keys of a Hive table, a Spark data source or an Iceberg table that a Delta table has no use for, and why.
_NOT_DELTA = {
    "using": "a Delta table is declared with 'format: delta' alone (schemaflow creates it USING delta): remove 'using'",
    "options": "Delta keeps a table's settings as its properties (delta.*): declare them under 'properties:'",
    "buckets": "Delta does not bucket rows: partition by partition columns under 'partitioned_by:', or remove it",
    "sorted_by": "Delta keeps no sort order (that is an Iceberg table's): remove it",
    **dict.fromkeys(("row_format", "serde", "serde_properties", "input_format", "output_format"),
                    "Delta reads and writes its Parquet data files itself, with no SerDe or format classes: remove it"),
}
# The table settings Delta documents (DeltaConfigs, delta-spark 3.3 to 4.x), without the prefix ``delta.``; the keys
# Delta writes itself (columnMapping.maxColumnId, the in-commit timestamps' enablement version, ...) are not among
# them. Each maps to the values Delta accepts: a closed set, or None for a count or duration checked below.
_BOOLEAN = ("true", "false")
SETTINGS: dict[str, tuple[str, ...] | None] = {
    **dict.fromkeys(("appendOnly", "autoOptimize.autoCompact", "autoOptimize.optimizeWrite", "checkpoint.writeStatsAsJson",
                     "checkpoint.writeStatsAsStruct", "enableChangeDataFeed", "enableDeletionVectors",
                     "enableExpiredLogCleanup", "enableInCommitTimestamps", "enableRowTracking", "enableTypeWidening",
                     "randomizeFilePrefixes"), _BOOLEAN),
    **dict.fromkeys(("checkpointInterval", "checkpointRetentionDuration", "dataSkippingNumIndexedCols",
                     "dataSkippingStatsColumns", "deletedFileRetentionDuration", "logRetentionDuration",
                     "randomPrefixLength", "setTransactionRetentionDuration"), None),
    "checkpointPolicy": ("classic", "v2"),
    "columnMapping.mode": ("none", "name", "id"),
    "isolationLevel": ("Serializable", "WriteSerializable"),
    "minReaderVersion": ("1", "2", "3"),
    "minWriterVersion": ("1", "2", "3", "4", "5", "6", "7"),
}
_COUNTS = ("checkpointInterval", "dataSkippingNumIndexedCols", "randomPrefixLength")
# The table features a table turns on by ``delta.feature.<name>: supported`` (Delta's TableFeature names, less its
# previews, tests and the features Delta turns on for itself, such as a catalog's own).
FEATURES = ("allowColumnDefaults", "appendOnly", "changeDataFeed", "checkpointProtection", "clustering",
            "columnMapping", "deletionVectors", "domainMetadata", "inCommitTimestamp", "invariants", "rowTracking",
            "timestampNtz", "typeWidening", "v2Checkpoint", "vacuumProtocolCheck", "variantType")
# Features a table file has no way to use: turning one on declares nothing.
_UNDECLARABLE = {
    "generatedColumns": "a generated column (GENERATED ALWAYS AS) cannot be declared in a table file",
    "checkConstraints": "a CHECK constraint cannot be declared in a table file",
    "identityColumns": "an identity column (GENERATED ... AS IDENTITY) cannot be declared in a table file",
}
FEATURE = "delta.feature."
CONSTRAINT = "delta.constraints."
# Properties of an Iceberg table or of a Hive table's storage, which a Delta table does not read.
_ICEBERG_PREFIXES = ("write.", "read.", "commit.", "history.", "format-version")
_HIVE_STORAGE = frozenset({"external", "transactional", "serialization.format", "skip.header.line.count",
                           "skip.footer.line.count", "parquet.compression", "orc.compress", "avro.schema.literal",
                           "avro.schema.url"})


def not_delta(doc: Document, data: dict[str, Any], problems: list[Problem]) -> None:
    """A problem for each key of ``data`` a Delta table has no use for, and for each partition transform."""
    problems.extend(Problem(doc.key(key), f"'{key}' is not for a Delta table: {why}")
                    for key, why in _NOT_DELTA.items() if key in data)
    for i, item in enumerate(data.get("partitioned_by", ())):
        if isinstance(item, str):
            problems.append(Problem(doc.at("partitioned_by", i), (
                f"{item!r} is not a partition column: a Delta table partitions by partition columns of its own, "
                "declared as {name: ds, type: string}; transforms are an Iceberg table's, and Delta's way to "
                "partition by a derived value, a generated column, cannot be declared in a table file")))


def check_properties(doc: Document, properties: dict[str, str], problems: list[Problem]) -> None:
    """Each ``delta.*`` property is one Delta documents, with a value it takes; Iceberg's and a Hive table's storage
    properties are refused, as are constraints and features a table file cannot use."""
    for key, value in properties.items():
        lower = key.lower()
        why = _why_not(key, value)
        if why is not None:
            problems.append(Problem(doc.key("properties", key), why))
        elif lower.startswith(_ICEBERG_PREFIXES):
            problems.append(Problem(doc.key("properties", key), (
                f"property '{key}' is an Iceberg table's; a Delta table keeps its settings as delta.* properties: "
                "remove it")))
        elif lower in _HIVE_STORAGE:
            problems.append(Problem(doc.key("properties", key), (
                f"property '{key}' says how a Hive table's files are stored or kept; Delta writes its Parquet files "
                "and its log itself: remove it")))


def _why_not(key: str, value: str) -> str | None:
    """Why the ``delta.*`` property ``key: value`` is refused, or None (also for a key that is not Delta's)."""
    if not key.lower().startswith("delta."):
        return None
    if key.startswith(CONSTRAINT):
        return (f"'{key}' is a CHECK constraint, which a table file cannot declare (schemaflow would neither review "
                "nor apply it): remove it")
    if key.startswith(FEATURE):
        feature = key[len(FEATURE):]
        if feature in _UNDECLARABLE:
            return f"'{key}' turns on a feature no table file can use: {_UNDECLARABLE[feature]}; remove it"
        if feature not in FEATURES:
            return f"Delta has no table feature {feature!r} that a table file turns on; the features are {', '.join(FEATURES)}"
        return None if value == "supported" else f"'{key}' takes 'supported' (a feature is only ever turned on), not {value!r}"
    name = key[len("delta."):]
    if name not in SETTINGS:
        known = ", ".join(sorted(SETTINGS, key=str.lower))
        return (f"'{key}' is no Delta table property schemaflow knows (Delta ignores or refuses unknown delta.* keys); "
                f"the properties are delta. followed by one of {known}, or {FEATURE}<feature>")
    allowed = SETTINGS[name]
    if allowed is not None and value not in allowed:
        return f"'{key}' takes {' or '.join(repr(v) for v in allowed)}, not {value!r}"
    if name in _COUNTS and not (value.isascii() and value.isdigit() and int(value) > 0):
        return f"'{key}' takes a whole number above 0, not {value!r}"
    if name.endswith("Duration") and not value.lower().startswith("interval "):
        return f"'{key}' takes a duration as Delta writes it ('interval 7 days'), not {value!r}"
    return None
