"""The conformance suite (``schemaflow.testing``) run on the Hive metastore backend, in the test process: each duty's
``schemaflow`` commands run through ``cli.main`` on the run's one SparkSession and its embedded metastore
(tests/conftest.py), on a database of the duty's own, dropped after it. Another writer is a notebook's Spark SQL on the
same session. The metastore bundled with pyspark 4 enforces the compare-and-swap guard and schemaflow has no setting
that turns it off, so a careless Hive catalog cannot be had here: that duty is left out of this class (the refusal of
a metastore without HIVE-26882 is tests/test_metastore_releases.py's)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from schemaflow.model import Column
from schemaflow.sql.quoting import ident, qualified
from schemaflow.testing import BackendSuite, Harness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Run with the newest pyspark only in CI (.ci/spark_versions.py without --ci runs it on every release).
pytestmark = [pytest.mark.spark, pytest.mark.one_release]


class HiveHarness(Harness):
    """The shared session's embedded metastore: a project naming no metastore reaches it (the active session)."""

    name = "hive"
    session: SparkSession | None = None  # the run's session, set by the suite's fixture

    def change_outside(self, root: Path, key: str, column: Column) -> None:
        assert self.session is not None
        self.session.sql(f"ALTER TABLE {qualified(key)} ADD COLUMNS ({ident(column.name)} {column.type})")


class TestHiveSuite(BackendSuite):
    harness = HiveHarness()

    @pytest.fixture(autouse=True)
    def _shared_session(self, spark: SparkSession) -> Iterator[None]:
        """Every duty on the run's session; the database the duty made dropped after it."""
        self.harness.session = spark
        yield
        if self.database:
            spark.sql(f"DROP DATABASE IF EXISTS {ident(self.database)} CASCADE")
