"""View SQL judged by Spark itself before anything is written.

``validate`` checks a view's SQL with sqlglot, which cannot know Spark's functions or its type
rules: an unknown function or a type error would otherwise surface only when ``apply`` runs the
CREATE VIEW, after other steps. So a plan against the metastore has Spark analyse each view it
creates or re-creates, against what the view reads *as the plan leaves it*: every declared table,
source and view on its way becomes a session-local temporary view of the declared shape (a table or
a source: typed NULL columns; a view: its own SQL, checked the same way), and the view's SQL is
rewritten to read those. Only the session changes; the metastore is not written. A source stands
in from the columns its file declares, as ``validate`` read them, whether or not the live table
is there yet.

Nothing live is read: a live view's SQL may call what its author registered in the metastore, which
Spark would fetch and load to analyse it. So a view that reads what has no stand-in here (what the
caller left out of ``desired``: views whose SQL calls code nobody approved, ``plan.view_code``; or a
view Spark refused) is not checked, nor is one whose SQL cannot be pointed at stand-ins: apply is
where Spark judges those.
"""
from __future__ import annotations

import re
from typing import Any
from collections.abc import Iterable, Sequence

from schemaflow.catalog.hive.jvm import JAVA_ERRORS, java_message
from schemaflow.model import Catalog, Table, View
from schemaflow.sql.session import temporary_view, typed_nulls
from schemaflow.sql.views import ViewSqlError, with_tables_renamed

STAND_IN_PREFIX = "__schemaflow_check_"
# Spark's analysis errors end with where in the (rewritten) text they are: meaningless to the user.
_POSITION = re.compile(r";?\s*line \d+ pos \d+;?\s*$")


class ViewChecker:
    """Stand-ins of the declared objects in one Spark session, made once each as they are needed."""

    def __init__(self, spark: Any, desired: Catalog) -> None:
        self.spark = spark
        self.desired = desired
        stand_ins = sorted(desired.objects.keys() | desired.sources.keys())
        self.names = {key: f"{STAND_IN_PREFIX}{i}" for i, key in enumerate(stand_ins)}
        self.made: dict[str, str | None] = {}  # key -> why Spark refused its stand-in, or None
        self.standing: set[str] = set()  # the keys whose stand-in is made

    def problems(self, keys: Iterable[str]) -> dict[str, str]:
        """Why Spark refuses the SQL of each view in ``keys``; views it accepts are left out."""
        current = self.spark.catalog.currentDatabase()
        try:
            found = {key: self.stand_in(key) for key in sorted(keys)}
        finally:
            for key in self.standing:
                self.spark.catalog.dropTempView(self.names[key])
            self._use(current)
        return {key: problem for key, problem in found.items() if problem}

    def stand_in(self, key: str) -> str | None:
        """Make the stand-in of ``key`` (and of what it reads first); why Spark refused it, or None."""
        if key in self.made:
            return self.made[key]
        self.made[key] = "it reads itself"  # a cycle, which validate has reported already
        obj = self.desired.objects.get(key) or self.desired.sources[key]
        self.made[key] = self._table(obj) if isinstance(obj, Table) else self._view(obj)
        return self.made[key]

    def _table(self, table: Table) -> str | None:
        return self._create(table.key, typed_nulls(table.all_columns))

    def _view(self, view: View) -> str | None:
        parsed = self._parse(view.sql)
        if parsed:
            return parsed
        for key in view.reads:
            if key in self.names:
                self.stand_in(key)
        if not self.standing.issuperset(view.reads):
            return None  # Spark would read the live object: not checked here
        try:
            sql = with_tables_renamed(view.sql, view.database, {key: self.names[key] for key in view.reads})
        except ViewSqlError:
            return None  # validate reports what sqlglot cannot read
        if sql is None:
            return None  # cannot be pointed at stand-ins: apply is where Spark judges it
        # As Spark resolves a view: unqualified functions in the view's own database, once it exists.
        self._use(view.database)
        return self._create(view.key, sql, [c.name for c in view.columns])

    def _use(self, database: str) -> None:
        """Make ``database`` the session's current database, or ``default`` while it does not exist."""
        exists = self.spark.catalog.databaseExists(database)
        self.spark.catalog.setCurrentDatabase(database if exists else "default")

    def _parse(self, sql: str) -> str | None:
        """Spark's parser on the SQL as written (what apply will send): why it refuses it, or None."""
        try:
            self.spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
        except JAVA_ERRORS as error:
            return f"Spark cannot parse this SQL: {self._message(error)}"
        return None

    def _create(self, key: str, query: str, columns: Sequence[str] = ()) -> str | None:
        try:
            self.spark.sql(temporary_view(self.names[key], query, columns))
        except JAVA_ERRORS as error:
            return f"Spark refuses this view's SQL: {self._message(error)}"
        self.standing.add(key)
        return None

    def _message(self, error: Exception) -> str:
        """Spark's message, naming the declared objects rather than their stand-ins."""
        text = _POSITION.sub("", java_message(error))
        for key, name in sorted(self.names.items(), key=lambda item: -len(item[1])):
            text = text.replace(name, key)
        return text

