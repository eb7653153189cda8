"""A step's last write in a second lane (``apply.lane``), beside the next step's statements, without a JVM.

Two recorders stand in for the two metastore connections; the real second connection is used by
every apply against a metastore server in the remote tests (test_safe_apply_remote and others),
which read what it wrote back from the metastore.
"""
from __future__ import annotations

import io
import threading
from contextlib import AbstractContextManager, contextmanager, nullcontext
from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest

from schemaflow.apply.executor import ApplyError, RecordingTarget, apply_plan
from schemaflow.apply.lane import Lane, LaneFailed
from schemaflow.claims import Claim
from schemaflow.errors import SchemaflowError
from schemaflow.model import VERSION_KEY, Column, Table
from schemaflow.plan.plan import Plan
from schemaflow.plan.steps import AddColumnsAction, CreateTableAction, SetParameters, Step

RUN = Claim("run1", "ci-host", 4242, "2026-01-01T00:00:00Z")


def created(key: str) -> Step:
    """A step that creates ``key``, then stamps it."""
    return Step("create_table", key, "table", f"create table {key}",
                (CreateTableAction(Table(*key.split("."), (Column("id", "bigint"),))),), stamp=SetParameters(key, {VERSION_KEY: f"v-{key}"}))


class Connection(RecordingTarget):
    """One of the two connections: records, in one shared log, what ran on it and in which thread."""

    def __init__(self, name: str, log: list[tuple[str, str, str]], second: Connection | None = None) -> None:
        super().__init__()
        self.name = name
        self.log = log
        self.second = second
        self.failing: set[str] = set()  # objects whose stamp fails
        self.hold: dict[str, threading.Event] = {}  # objects whose stamp waits for an event (10 s at most)
        self.on_statement: Callable[[str], None] = lambda what: None  # called as each create or alter runs

    def _logged(self, what: str) -> None:
        self.log.append((self.name, threading.current_thread().name, what))
        self.on_statement(what)

    def create_table(self, table: Table, claim: str) -> None:
        self._logged(f"create {table.key}")
        super().create_table(table, claim)

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        self._logged(f"add columns to {key}")
        super().add_columns(key, columns, expected)

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        if key in self.hold:
            assert self.hold[key].wait(10)
        self.log.append((self.name, threading.current_thread().name, f"stamp {key}"))
        if key in self.failing:
            raise RuntimeError(f"the stamp of {key} failed")
        super().set_parameters(key, set, unset, expected)

    def beside(self) -> AbstractContextManager[RecordingTarget | None]:
        return nullcontext(self.second)


def connections() -> tuple[Connection, Connection, list[tuple[str, str, str]]]:
    log: list[tuple[str, str, str]] = []
    second = Connection("second", log)
    return Connection("first", log, second), second, log


def test_a_write_runs_in_its_thread_and_its_failure_is_raised_where_it_is_waited_for() -> None:
    lane = Lane()
    ran: list[str] = []
    lane.hand(0, "db.a", lambda: ran.append(threading.current_thread().name))
    assert lane.pending == "db.a"
    lane.wait()
    assert ran == ["apply-lane"] and lane.pending is None

    def fails() -> None:
        raise RuntimeError("refused")
    lane.hand(3, "db.b", fails)
    with pytest.raises(LaneFailed) as caught:
        lane.wait()
    assert caught.value.index == 3 and str(caught.value.cause) == "refused"
    lane.close()


def test_a_write_handed_to_the_lane_waits_for_the_one_in_it() -> None:
    lane = Lane()
    first_may_end, order = threading.Event(), []

    def first() -> None:
        assert first_may_end.wait(10)
        order.append("first")
    lane.hand(0, "db.a", first)
    handing = threading.Thread(target=lambda: lane.hand(1, "db.b", lambda: order.append("second")))
    handing.start()
    handing.join(0.2)
    assert handing.is_alive() and order == []  # the second is not handed over while the first runs
    first_may_end.set()
    handing.join(10)
    lane.wait()
    assert order == ["first", "second"]
    lane.close()


def test_each_stamp_runs_on_the_second_connection_while_the_next_statement_runs_on_the_first() -> None:
    first, second, log = connections()
    second.hold["db.a"] = threading.Event()

    def statement(what: str) -> None:
        # The stamp of db.a goes on only once db.b's CREATE has begun: only a lane beside the statements lets it.
        if "db.b" in what:
            second.hold["db.a"].set()
    first.on_statement = statement
    plan = Plan(steps=(created("db.a"), created("db.b"), created("db.c")), databases=("db",))
    out = io.StringIO()
    apply_plan(plan, first, progress=out, claim=RUN)
    assert [(name, what) for name, _, what in log] == [
        ("first", "create db.a"), ("first", "create db.b"),
        ("second", "stamp db.a"), ("first", "create db.c"),
        ("second", "stamp db.b"), ("second", "stamp db.c")]
    assert {thread for name, thread, _ in log if name == "second"} == {"apply-lane"}
    assert [a.object for a in second.actions] == ["db.a", "db.b", "db.c"]  # every stamp landed before it returned
    assert out.getvalue().count("done") == 3


def test_a_step_of_the_object_whose_stamp_is_in_the_lane_waits_for_it() -> None:
    first, second, log = connections()
    second.hold["db.a"] = threading.Event()
    threading.Timer(0.2, second.hold["db.a"].set).start()  # the stamp lands late: the ALTER must wait for it
    altered = Step("add_columns", "db.a", "table", "add 1 column to db.a",
                   (AddColumnsAction("db.a", (Column("x", "string"),)),), stamp=SetParameters("db.a", {VERSION_KEY: "v2"}))
    apply_plan(Plan(steps=(created("db.a"), altered), databases=("db",)), first, claim=RUN)
    assert [what for _, _, what in log] == ["create db.a", "stamp db.a", "add columns to db.a", "stamp db.a"]
    # The first stamp expects the claim db.a was created with, the second the version the first set.
    assert second.guards == [first.claims[0], "v-db.a"]


def test_a_stamp_that_fails_beside_the_next_step_names_its_step_and_the_one_begun() -> None:
    first, second, _ = connections()
    second.failing.add("db.a")
    plan = Plan(steps=(created("db.a"), created("db.b"), created("db.c")), databases=("db",))
    out = io.StringIO()
    with pytest.raises(ApplyError) as caught:
        apply_plan(plan, first, progress=out, claim=RUN)
    assert caught.value.failed == 0 and caught.value.begun == 1
    assert str(caught.value).startswith(
        "step 1 failed (create table db.a): the stamp of db.a failed\napplied (0):\n  none\n"
        "begun, not finished (1):\n  2. create table db.b\n"
        "not applied (2):\n  1. create table db.a\n  3. create table db.c\n")
    assert out.getvalue().endswith("[2/3] create table db.b ... stopped: step 1 failed\n")
    assert "db.c" not in [a.object for a in first.actions if isinstance(a, CreateTableAction)]


def test_a_step_that_fails_itself_reports_an_earlier_stamp_that_failed_beside_it_first() -> None:
    first, second, _ = connections()
    second.failing.add("db.a")
    second.hold["db.a"] = threading.Event()

    def statement(what: str) -> None:
        if "db.b" in what:  # db.a's stamp fails while db.b's CREATE fails too
            second.hold["db.a"].set()
            raise RuntimeError("Spark refuses db.b")
    first.on_statement = statement
    plan = Plan(steps=(created("db.a"), created("db.b")), databases=("db",))
    with pytest.raises(ApplyError) as caught:
        apply_plan(plan, first, claim=RUN)
    # db.b's CREATE failed before it wrote anything: it is not begun; db.a's stamp failed first.
    assert caught.value.failed == 0 and caught.value.begun is None
    assert str(caught.value).startswith("step 1 failed (create table db.a): the stamp of db.a failed\n")


def test_the_last_step_ends_when_its_stamp_has_landed_and_its_failure_is_its_own() -> None:
    first, second, _ = connections()
    second.failing.add("db.b")
    out = io.StringIO()
    with pytest.raises(ApplyError) as caught:
        apply_plan(Plan(steps=(created("db.a"), created("db.b")), databases=("db",)), first, progress=out, claim=RUN)
    assert caught.value.failed == 1 and caught.value.begun is None
    assert out.getvalue().endswith("[2/2] create table db.b ... FAILED\n")


def test_with_a_pause_each_write_has_landed_when_its_point_is_reached() -> None:
    first, second, log = connections()
    seen: list[tuple[str, int]] = []
    plan = Plan(steps=(created("db.a"), created("db.b")), databases=("db",))
    apply_plan(plan, first, claim=RUN, pause=lambda point: seen.append((point, len(second.actions))))
    assert seen == [("claimed", 0), ("1.1", 0), ("1.2", 1), ("2.1", 1), ("2.2", 2)]


def test_a_second_connection_that_cannot_be_opened_stops_the_run_before_anything_is_claimed() -> None:
    class NoSecond(Connection):
        @contextmanager
        def beside(self) -> Iterator[RecordingTarget | None]:
            raise SchemaflowError("opening a second connection to the Hive metastore (thrift://m:9083): refused")
            yield None

    target = NoSecond("first", [])
    plan = Plan(steps=(created("db.a"),), databases=("db",), guards={"db.a": "v0"})
    with pytest.raises(SchemaflowError, match="opening a second connection"):
        apply_plan(plan, target, claim=RUN)
    assert target.actions == []  # no claim taken, nothing run


def test_a_plan_without_stamps_opens_no_second_connection() -> None:
    class Counted(Connection):
        opened = 0

        def beside(self) -> AbstractContextManager[RecordingTarget | None]:
            Counted.opened += 1
            return super().beside()

    first, _, _ = connections()
    target = Counted("first", [], first.second)
    unstamped = Step("create_table", "db.a", "table", "create table db.a", created("db.a").body)
    apply_plan(Plan(steps=(unstamped,), databases=("db",)), target, claim=RUN)
    assert Counted.opened == 0 and [a.object for a in target.actions if isinstance(a, CreateTableAction)] == ["db.a"]
    apply_plan(Plan(steps=(created("db.b"),), databases=("db",)), target, claim=RUN)
    assert Counted.opened == 1
