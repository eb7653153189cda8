"""The seam speaks in changes (issue 58): a plan's actions carry the model, never SQL text, and the Hive metastore's
writer renders each to the Spark SQL plans have always shown, made by the same builders of ``sql.ddl``."""
from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from schemaflow.apply.executor import RecordingTarget, apply_plan
from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.claims import Claim
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, Column, Table, View
from schemaflow.plan.plan import FORMAT_VERSION, Plan, PlanBuilder
from schemaflow.plan.steps import (Action, AddColumnsAction, CheckLiveViews, CreateTableAction, CreateViewAction,
                                   DropTableAction, DropViewAction, KeepViewPartitions, PartitionView,
                                   SetColumnCommentsAction, SetTableCommentAction, action_from_data)
from schemaflow.project import load_project
from schemaflow.render.shown import statement_lines
from schemaflow.sql import ddl
from schemaflow.workflow import applied_state, desired_state, load_plan
from tests.catalogs import DAILY, DESIRED, ORDERS, TOP, WIDER, applied, catalog

RUN = Claim("run1", "ci-host", 4242, "2026-01-01T00:00:00Z")
# Names and text a user may write, or another client of the catalog may have stored, that SQL must not take apart.
HOSTILE = Table("we`ird db", "t`; DROP TABLE x; --", (Column("c`1", "bigint", "it's\n'; DROP TABLE y; --"),
                                                      Column("${claim}", "string", "${claim}")),
                (Column("ds", "string", "a \\' quote"),), comment="'); DROP DATABASE z; --", location="/tmp/a'b",
                format="parquet", data_source=True)
HOSTILE_VIEW = View("we`ird db", "v`", "SELECT `c``1` AS x, * FROM `we``ird db`.`t``; DROP TABLE x; --`",
                    (Column("x", None, "${claim}"), Column("y", None, "it's")), comment="*/ --",
                    stars=((20, 21, "`c``1`, `${claim}`"),))
# Each kind of action that was Spark SQL text before, and the statements sql.ddl made of it then.
SQL_ACTIONS: tuple[tuple[Action, tuple[str, ...]], ...] = (
    (CreateTableAction(HOSTILE), (ddl.create_table(HOSTILE),)),
    (CreateTableAction(ORDERS), (ddl.create_table(ORDERS),)),
    (AddColumnsAction(HOSTILE.key, HOSTILE.columns), (ddl.add_columns(HOSTILE.key, HOSTILE.columns),)),
    (SetTableCommentAction(HOSTILE.key, HOSTILE.comment), (ddl.set_table_comment(HOSTILE.key, HOSTILE.comment),)),
    (SetTableCommentAction(ORDERS.key, None), (ddl.set_table_comment(ORDERS.key, None),)),
    (SetColumnCommentsAction(HOSTILE.key, HOSTILE.columns), tuple(ddl.set_column_comment(HOSTILE.key, c)
                                                                  for c in HOSTILE.columns)),
    (DropTableAction(HOSTILE.key), (ddl.drop("table", HOSTILE.key),)),
    (CreateViewAction(HOSTILE_VIEW), (ddl.use_database(HOSTILE_VIEW.database), ddl.create_view(HOSTILE_VIEW, False))),
    (CreateViewAction(HOSTILE_VIEW, replace=True),
     (ddl.use_database(HOSTILE_VIEW.database), ddl.create_view(HOSTILE_VIEW, True))),
    (DropViewAction(HOSTILE_VIEW.key), (ddl.drop("view", HOSTILE_VIEW.key),)),
    (DropViewAction(HOSTILE_VIEW.key, engine=False), ()),
)
DDL = re.compile(r"\s*(CREATE|ALTER|DROP|USE|COMMENT|REFRESH|INSERT|SET)\b", re.IGNORECASE)


class HiveStatements(RecordingTarget):
    """Records every action, and has the Hive metastore's writer render those it takes as Spark SQL, to the session
    this is (its ``sql``): the statements it would run, with no JVM. Its writes are unguarded (``expected`` None): the
    claim each reads before its statement is a metastore call (``tests/test_hive_sql_guards_spark.py``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []
        self.hive = Metastore.__new__(Metastore)  # its Spark SQL only: nothing of it reaches the metastore
        self.hive.spark = self
        self.hive.endpoint = "the statements of a test"

    def sql(self, statement: str) -> None:
        self.ran.append(statement)

    def create_table(self, table: Table, claim: str) -> None:
        super().create_table(table, claim)
        self.hive.create_table(table, claim)

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        super().add_columns(key, columns, expected)
        self.hive.add_columns(key, columns, None)

    def set_table_comment(self, key: str, comment: str | None, expected: str | None) -> None:
        super().set_table_comment(key, comment, expected)
        self.hive.set_table_comment(key, comment, None)

    def set_column_comments(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        super().set_column_comments(key, columns, expected)
        self.hive.set_column_comments(key, columns, None)

    def drop_table(self, key: str, expected: str | None) -> None:
        super().drop_table(key, expected)
        self.hive.drop_table(key, None)

    def create_view(self, view: View, replace: bool, claim: str) -> None:
        super().create_view(view, replace, claim)
        self.hive.create_view(view, replace, claim)

    def drop_view(self, key: str, expected: str | None = None, engine: bool = False) -> None:
        super().drop_view(key, expected, engine)
        if engine:  # else a metastore call
            self.hive.drop_view(key, None, engine)

    def after_apply(self, changed: Sequence[str]) -> list[str]:
        return self.hive.after_apply(changed)


@pytest.mark.parametrize("action, statements", SQL_ACTIONS, ids=[type(a).__name__ for a, _ in SQL_ACTIONS])
def test_each_action_round_trips_through_plan_json_and_shows_what_sql_ddl_made_of_it(action: Action,
                                                                                     statements: tuple[str, ...]):
    again = action_from_data(json.loads(json.dumps(action.to_data())))
    assert again == action and again.describe() == action.describe()  # the stars too, which no equality compares
    assert action.statements == statements
    assert action.describe() == ("\n".join(f"{s};" for s in statements) or
                                 f"-- metastore drop_table {action.object} (a view: its SQL is not analysed)")
    assert not [value for value in strings(action.to_data()) if DDL.match(value)]  # its data holds no statement


def strings(value: Any) -> Iterator[str]:
    """Every string in ``value`` (plain data, or dataclasses and what they hold), keys aside."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for found in dataclasses.fields(value):
            yield from strings(getattr(value, found.name))
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from strings(item)


def plans(example: Path) -> Iterator[Plan]:
    """Plans of every kind of action that was SQL: the example warehouse created, then evolved (a column appended, a
    table's comment changed, a data-source table's column comments, views re-created), and objects dropped."""
    desired = desired_state(load_project(example, env={}))
    yield PlanBuilder(desired, Catalog()).build()
    live = applied_state(desired)
    orders = desired.objects["retail.orders"]
    assert isinstance(orders, Table)
    evolved = replace(orders, comment="Orders, evolved", columns=orders.columns + (Column("coupon", "string"),))
    yield PlanBuilder(replace(desired, objects={**desired.objects, orders.key: evolved}), live).build()
    sessions = desired.objects["analytics.sessions"]
    assert isinstance(sessions, Table)
    commented = replace(sessions, data_source=True, columns=tuple(replace(c, comment=f"{c.name}, said")
                                                                  for c in sessions.columns))
    yield PlanBuilder(catalog(replace(commented, comment=None), databases=("analytics",)),
                      applied(catalog(replace(sessions, data_source=True), databases=("analytics",)))).build()
    yield PlanBuilder(catalog(), applied(DESIRED), allow_destructive=True).build()


def test_a_recorded_apply_of_the_example_warehouse_holds_no_sql_and_hive_runs_what_its_plan_shows(example: Path):
    kinds = set()
    for plan in plans(example):
        assert not plan.blocked
        target = HiveStatements()
        apply_plan(plan, target, claim=RUN)
        kinds |= {type(a) for a in target.actions}
        assert not [value for action in target.actions for value in strings(action) if DDL.match(value)]
        # The Hive writer ran the statements the plan's actions show, in order, each CREATE with the run's claim ...
        planned = [a for step in plan.steps for a in step.actions]
        claims = iter(target.claims)
        assert target.ran == [ddl.fill_claim(s, next(claims)) if isinstance(a, (CreateTableAction, CreateViewAction))
                              and s == a.statements[-1] else s for a in planned for s in getattr(a, "statements", ())]
        # ... which the plan's text shows (verbose: as a re-created view's whole statement, not its diff).
        shown = "\n".join(line for step in plan.steps for line in statement_lines(step, verbose=True))
        assert all(f"{s};" in shown for a in planned for s in getattr(a, "statements", ()))
    assert kinds >= {CreateTableAction, AddColumnsAction, SetTableCommentAction, SetColumnCommentsAction,
                     DropTableAction, CreateViewAction, DropViewAction}


def test_a_view_step_shows_the_database_its_create_runs_in_first_as_plans_always_have():
    partitioned = replace(DAILY, partitioned_on=("ds",))
    [step] = [s for s in PlanBuilder(catalog(ORDERS, partitioned, TOP), applied(DESIRED)).build().steps
              if s.object == DAILY.key]
    assert [type(a) for a in step.body] == [KeepViewPartitions, CheckLiveViews, CreateViewAction, PartitionView]
    lines = statement_lines(step)
    assert lines[:2] == ["USE `retail`;", "-- metastore retail.daily: read its partitions, to re-add them with their "
                         "parameters and times"]
    assert lines[2].startswith("CREATE OR REPLACE VIEW `retail`.`daily` (") and lines.count("USE `retail`;") == 1


def test_after_an_apply_the_hive_writer_refreshes_what_spark_may_have_cached():
    target = HiveStatements()
    plan = PlanBuilder(WIDER, applied(DESIRED)).build()
    apply_plan(plan, target, claim=RUN)
    assert target.after_apply(("retail.orders",)) == [] and target.ran[-1] == "REFRESH TABLE `retail`.`orders`"


def test_a_plan_saved_in_the_format_before_typed_actions_is_refused(tmp_path: Path):
    data = PlanBuilder(DESIRED, Catalog()).build().to_data()
    assert data["format_version"] == FORMAT_VERSION == 4
    old = {**data, "format_version": 3, "steps": [{**s, "actions": [{"action": "sql", "sql": "USE `retail`"}]}
                                                  for s in data["steps"]]}
    (tmp_path / "plan.json").write_text(json.dumps(old))
    with pytest.raises(SchemaflowError) as refused:
        load_plan(tmp_path / "plan.json")
    assert str(refused.value) == (f"{tmp_path / 'plan.json'}: refused, plan format 3 is not 4; re-run schemaflow plan; "
                                  "make a new one with schemaflow plan --out")
    with pytest.raises(ValueError, match="unknown action kind 'sql'"):
        action_from_data({"action": "sql", "sql": "USE `retail`"})
