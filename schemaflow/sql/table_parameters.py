"""The table parameters that the metastore, Hive, Spark or schemaflow write themselves: one list, read two ways.

A declaration may not set one: the spec refuses it and says what to do instead, whatever its case (a key spelt
otherwise is still someone reaching for the reserved one). The live reader leaves them out of a table's
properties, matching them as their owners write them, so that what a project declares is never planned again
against what the metastore, Hive or Spark wrote on their own.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from schemaflow.model import SCHEMAFLOW_PREFIX

_STATISTICS = "the metastore keeps the table's statistics there (ANALYZE TABLE computes them): remove it"
# Each as its owner writes it, and what a declaration does instead.
RESERVED_KEYS: Mapping[str, str] = {
    "comment": "the comment is kept under that key: declare it with 'comment:' instead",
    "EXTERNAL": "Hive reads it to tell an external table: declare 'external: true' instead",
    "transient_lastDdlTime": "the metastore stamps the time of every change there: remove it",
    "bucketing_version": "Hive writes it for a table's bucketing: remove it",
    **dict.fromkeys(("numFiles", "numRows", "rawDataSize", "totalSize", "numPartitions", "numFilesErasureCoded",
                     "COLUMN_STATS_ACCURATE"), _STATISTICS),
}
RESERVED_PREFIXES: Mapping[str, str] = {
    "spark.sql.": "Spark keeps a table's provider and its own copy of the schema under 'spark.sql.' (a hand-written "
                  "'spark.sql.sources.provider' turns a Hive table into a broken data-source table): declare "
                  "'format:' and 'columns:' instead",
    "view.": "Spark writes a view's output columns, schema mode and SQL settings under 'view.': remove it",
    "last_modified_": "Hive records who changed an object last, and when, under 'last_modified_': remove it",
    SCHEMAFLOW_PREFIX: f"schemaflow writes the '{SCHEMAFLOW_PREFIX}' properties itself",
}
_FOLDED = {key.lower(): reason for key, reason in RESERVED_KEYS.items()}
_PREFIXES = tuple(RESERVED_PREFIXES)


def why_reserved(key: str) -> str | None:
    """Why a declaration may not set the parameter ``key`` (in any case, compared after NFKC as every key is:
    ``ｃｏｍｍｅｎｔ`` is ``comment``), and what to do instead; None if it may."""
    folded = unicodedata.normalize("NFKC", key).lower()
    return _FOLDED.get(folded) or next((why for prefix, why in RESERVED_PREFIXES.items()
                                        if folded.startswith(prefix)), None)


def written_by_others(key: str) -> bool:
    """Whether the live parameter ``key`` is one the metastore, Hive, Spark or schemaflow wrote, not the user's."""
    return key in RESERVED_KEYS or key.startswith(_PREFIXES)
