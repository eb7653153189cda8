"""A Delta statement committed only on top of the log version the plan read: Delta's own commit as the guard.

A Delta table's truth is its ``_delta_log``: version N+1 is a file that Delta's log store writes only if it is
absent, so of two writers that read version N exactly one lands N+1. What a plan reviewed is the table at the
version it read; apply runs each Delta DDL statement (``ALTER TABLE ... ADD COLUMNS``, ``RENAME COLUMN``,
``DROP COLUMN``, ``ALTER COLUMN ... TYPE``, ``SET TBLPROPERTIES``) through the user's SparkSession with delta-spark,
and the statement must land at exactly that version + 1.

How, read in delta-spark 3.3's source and measured with two writers (tests/test_delta_engine.py):

- A statement's transaction reads the *latest* snapshot when it starts (``AlterDeltaTableCommand.startTransaction``
  calls ``DeltaTableV2.startTransaction()`` with no snapshot, i.e. ``DeltaLog.update()``); nothing lets a caller pin
  it to an older version, and a commit that finds its version taken is by default checked for logical conflicts and
  made again on top of the winner (``OptimisticTransaction.doCommitRetryIteratively``): an ``ALTER`` lands on top of
  a concurrent ``INSERT``, never refused. So three things together:
  1. the log's version is read first (``DeltaTable.forPath(...).history(1)``): not ``expected_version``, and nothing
     is run (a commit between plan and apply: ``ConcurrentChange``);
  2. the statement runs with ``spark.databricks.delta.maxCommitAttempts=0`` for its duration (the session's
     previous value restored after): its transaction makes one attempt, so a commit that landed while it ran makes
     it fail rather than be made again on top (it then fails and nothing of it is in the log);
  3. the version it committed (``spark.databricks.delta.lastCommitVersionInSession``, which Delta sets after writing
     the commit file) must be ``expected_version + 1``: with 1, that holds exactly when no other commit landed
     between the read and the statement's commit.
  A statement that fails while the log moved on is a ``ConcurrentChange`` (Delta refused it, or the winner made it
  pointless: two appliers of one plan adding the same column), with the versions seen; one that fails on a log
  still at ``expected_version`` fails with its own error.
- Left open: a commit by another writer between the read in 1 and the statement's own read of the latest snapshot
  (Spark parsing and resolving the statement: with two appliers of different changes started at the same instant,
  2 rounds of 20 met it here, 18 had the second refused at its commit). The statement then lands on top of it; 3
  finds that, and the ``ConcurrentChange`` raised says
  the statement's commit *is* in the table (one commit: the change whole, never half), so that the apply stops and
  the next plan reads the table as it now is. Two appliers of one plan do not both land there (the second statement
  finds its change made and Delta refuses it); two schemaflow runs are kept apart before either reaches the log where
  apply claims the table's metastore entry first (its compare-and-swap), so the window is an outside writer's.
  Closing it would mean committing from a transaction started at ``expected_version``
  (``DeltaLog.startTransaction(table, Some(snapshotAt(version)))``) with the metadata the statement would make:
  re-implementing each ALTER command outside Delta through its internal classes, which differ between delta-spark
  3.x and 4.x. This module uses only ``DeltaTable``'s public API and two SQL settings that both have.

The session configuration is the session's, not the thread's: a caller running other Delta writes in the same
SparkSession from other threads while this runs sees their commits made with one attempt too.
"""
from __future__ import annotations

from typing import Any

from schemaflow.catalog.hive.jvm import java_message, jvm_view
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.output_safety import one_line

MAX_COMMIT_ATTEMPTS = "spark.databricks.delta.maxCommitAttempts"
LAST_COMMIT_VERSION = "spark.databricks.delta.lastCommitVersionInSession"
WHAT = "Delta log version"


def log_version(spark: Any, location: str) -> int | None:
    """The version of the latest commit in the log of the Delta table at ``location``; None where there is no
    Delta table there."""
    jvm = jvm_view(spark)
    session = spark._jsparkSession
    if not jvm.io.delta.tables.DeltaTable.isDeltaTable(session, location):
        return None
    history = jvm.io.delta.tables.DeltaTable.forPath(session, location).history(1)
    latest = history.head()
    return int(latest.getLong(latest.fieldIndex("version")))


def run_on_version(spark: Any, location: str, expected_version: int, statement: str) -> int:
    """Runs the Delta ``statement`` (which names the table at ``location``) so that it commits version
    ``expected_version + 1`` and nothing else; returns that version. Raises ``ConcurrentChange`` with the versions
    seen if the log is not at ``expected_version`` (nothing run), or another commit landed under the statement."""
    table = one_line(location)  # the location is the live table's: hostile on its way out
    found = log_version(spark, location)
    if found != expected_version:
        raise ConcurrentChange(table, str(expected_version), _said(found), WHAT)
    previous_attempts = spark.conf.get(MAX_COMMIT_ATTEMPTS, None)
    spark.conf.unset(LAST_COMMIT_VERSION)
    spark.conf.set(MAX_COMMIT_ATTEMPTS, "0")
    try:
        spark.sql(statement)
    except Exception as error:  # noqa: BLE001 -- Delta's refusal and Spark's are told apart by the log below
        moved = log_version(spark, location)
        if moved != expected_version:
            raise ConcurrentChange(table, str(expected_version),
                                   f"{_said(moved)} (this statement failed: {java_message(error)})", WHAT) from error
        raise
    finally:
        if previous_attempts is None:
            spark.conf.unset(MAX_COMMIT_ATTEMPTS)
        else:
            spark.conf.set(MAX_COMMIT_ATTEMPTS, previous_attempts)
    committed = spark.conf.get(LAST_COMMIT_VERSION, None)
    if committed is None:
        raise SchemaflowError(f"{table}: the Delta statement made no commit, where one was expected on version "
                              f"{expected_version}")
    landed = int(committed)
    if landed != expected_version + 1:
        raise ConcurrentChange(table, str(expected_version),
                               f"{landed - 1} (another writer committed after version {expected_version}; this "
                               f"statement's commit, version {landed}, is in the table)", WHAT)
    return landed


def _said(version: int | None) -> str:
    return "no Delta table" if version is None else str(version)
