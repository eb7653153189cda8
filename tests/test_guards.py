"""Claims and guarded writes, without a JVM: what the executor expects of each write, what a plan
finishes after a stopped run, when an apply refuses another's claims, and how reads are retried.

The metastore's own compare-and-swap is proven in tests/test_safe_apply_remote.py and
tests/test_apply_spark.py; here a target that keeps versions the way the metastore does stands in.
"""
from __future__ import annotations

import socket
import subprocess
import sys
from dataclasses import replace
from collections.abc import Mapping, Sequence

import pytest

from schemaflow.apply.executor import ApplyError, RecordingTarget, apply_plan
from schemaflow.catalog.hive.metastore import READ_ATTEMPTS, Metastore
from schemaflow.catalog.hive.spark_compat import enforces_guards
from schemaflow.claims import Claim, new_run, parse_claim
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import VERSION_KEY, View
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.steps import CreateTableAction, CreateViewAction, SetColumns
from schemaflow.workflow import check_claims
from tests.catalogs import DESIRED, WIDER, applied

RUN = Claim("run1", "ci-host", 4242, "2026-01-01T00:00:00Z")


class VersionedTarget(RecordingTarget):
    """Keeps each object's schemaflow.version and refuses a guarded write the way the metastore does."""

    def __init__(self, versions: Mapping[str, str | None], refuse: str | None = None) -> None:
        super().__init__()
        self.versions = dict(versions)
        self.refuse = refuse  # an object another writer changes just before this run claims it

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        if key == self.refuse:
            self.versions[key] = "changed-by-someone-else"
        if expected is not None and self.versions.get(key) != expected:
            raise ConcurrentChange(key, expected, self.versions.get(key))
        super().set_parameters(key, set, unset, expected)
        if VERSION_KEY in set:
            self.versions[key] = set[VERSION_KEY]
        if VERSION_KEY in unset:
            self.versions.pop(key, None)


def dead_pid() -> int:
    """The process id of a process that has finished."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(finished.stdout)


def test_a_claim_round_trips_through_the_version_it_replaces():
    claim = RUN.for_object(("alter_columns",), cascade=True)
    assert parse_claim(claim.token) == claim
    assert parse_claim("3f2a9c0d1e2b4a5c") is None and parse_claim(None) is None
    assert parse_claim("claim:not json").run == "unknown"  # still a claim: nobody can say it is finished


def test_a_claim_is_alive_while_its_process_runs_on_this_host():
    assert new_run().alive() is True
    dead = Claim("r", socket.gethostname(), dead_pid(), "t")
    assert dead.alive() is False
    assert replace(dead, host="another-host").alive() is None  # cannot tell from here


def test_the_plan_records_the_version_it_saw_and_says_which_objects_it_adopts():
    live = applied(DESIRED)
    unmanaged = replace(live.objects["retail.top"], version=None)
    live = replace(live, objects={**live.objects, "retail.top": unmanaged})
    plan = PlanBuilder(WIDER, live).build()
    assert plan.guards == {"retail.daily": live.objects["retail.daily"].version,
                           "retail.orders": live.objects["retail.orders"].version, "retail.top": None}
    [top] = [s for s in plan.steps if s.object == "retail.top"]
    assert any(n.startswith("not yet managed by schemaflow: adopted with a plain first write") for n in top.notes)
    assert not any("adopted" in n for s in plan.steps if s.object != "retail.top" for n in s.notes)


def test_every_write_expects_the_claim_and_the_stamp_swaps_it_for_the_version():
    live = applied(DESIRED)
    plan = PlanBuilder(WIDER, live).build()
    target = VersionedTarget({k: o.version for k, o in live.objects.items()})
    apply_plan(plan, target, claim=RUN)
    claims = target.actions[:3]
    assert [a.object for a in claims] == ["retail.daily", "retail.orders", "retail.top"]  # name order
    assert target.guards[:3] == [live.objects[a.object].version for a in claims]
    tokens = {a.object: a.set[VERSION_KEY] for a in claims}
    assert all(parse_claim(t).run == "run1" for t in tokens.values())
    assert parse_claim(tokens["retail.orders"]).steps == ("add_columns",)
    # After the claims, every guarded write expects the claim of its object ...
    assert target.guards[3:] == [tokens[a.object] for a in target.actions[3:]
                                 if not isinstance(a, (CreateTableAction, CreateViewAction))]
    # ... and each object ends with its new version, not a claim.
    assert target.versions == {k: o.version for k, o in applied(WIDER).objects.items()}


def test_a_claim_that_fails_hands_back_those_taken_and_applies_nothing():
    live = applied(DESIRED)
    versions = {k: o.version for k, o in live.objects.items()}
    target = VersionedTarget(versions, refuse="retail.orders")
    with pytest.raises(SchemaflowError) as caught:
        apply_plan(PlanBuilder(WIDER, live).build(), target, claim=RUN)
    assert str(caught.value).startswith("retail.orders was modified concurrently: its schemaflow.version is "
                                        "'changed-by-someone-else'")
    assert "nothing was applied" in str(caught.value)
    assert target.versions == {**versions, "retail.orders": "changed-by-someone-else"}  # daily's claim handed back
    assert not any(hasattr(a, "sql") for a in target.actions)


def test_a_failed_step_keeps_the_claims_of_what_it_began_and_hands_back_the_rest():
    live = applied(DESIRED)
    versions = {k: o.version for k, o in live.objects.items()}

    class FailsOnDailysStamp(VersionedTarget):
        """The view is re-created, then the write that stamps it fails."""

        def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                           expected: str | None = None) -> None:
            if key == "retail.daily" and set.get(VERSION_KEY) == applied(WIDER).objects[key].version:
                raise RuntimeError("boom")
            super().set_parameters(key, set, unset, expected)

    target = FailsOnDailysStamp(versions)
    with pytest.raises(ApplyError):
        apply_plan(PlanBuilder(WIDER, live).build(), target, claim=RUN)
    assert target.versions["retail.orders"] == applied(WIDER).objects["retail.orders"].version  # finished
    assert parse_claim(target.versions["retail.daily"]).steps == ("replace_view",)  # begun: the journal stays
    assert target.versions["retail.top"] == versions["retail.top"]  # not begun: handed back


def test_a_step_that_fails_at_its_first_action_hands_back_its_objects_claim():
    live = applied(DESIRED)
    versions = {k: o.version for k, o in live.objects.items()}

    class FailsOnDaily(VersionedTarget):
        def create_view(self, view: View, replace: bool, claim: str) -> None:
            if view.key == "retail.daily":
                raise RuntimeError("Spark refuses the view")
            super().create_view(view, replace, claim)

    target = FailsOnDaily(versions)
    with pytest.raises(ApplyError):
        apply_plan(PlanBuilder(WIDER, live).build(), target, claim=RUN)
    assert target.versions["retail.orders"] == applied(WIDER).objects["retail.orders"].version  # finished
    assert target.versions["retail.daily"] == versions["retail.daily"]  # unchanged: no claim left behind
    assert target.versions["retail.top"] == versions["retail.top"]


def test_a_plan_after_a_stopped_run_finishes_what_its_claims_say():
    live = applied(WIDER)
    run = Claim("run1", socket.gethostname(), dead_pid(), "2026-01-01T00:00:00Z")
    left = run.for_object(("replace_view",), False).token
    stopped = replace(live, objects={**live.objects, "retail.daily": replace(live.objects["retail.daily"], version=left),
                                     "retail.orders": replace(live.objects["retail.orders"],
                                                              version=run.for_object(("alter_columns",), True).token)})
    asked: list[str] = []
    plan = PlanBuilder(WIDER, stopped, stale_partitions=lambda key: asked.append(key) or 7,
                       count_partitions=lambda key: 40).build()
    assert asked == ["retail.orders"]  # listed once, though the resume and the repair both need it
    by_object = {s.object: s for s in plan.steps}
    assert by_object["retail.daily"].kind == "replace_view"
    assert f"finishing the re-creation that {run.describe()}" in by_object["retail.daily"].summary
    [columns] = [a for a in by_object["retail.orders"].actions if isinstance(a, SetColumns)]
    assert columns.cascade and columns.batched  # the partitions the stopped cascade left stale are rewritten
    assert plan.warnings == (f"retail.daily: left half-done by {run.describe()}; this plan finishes it",
                             f"retail.orders: left half-done by {run.describe()}; this plan finishes it")
    assert plan.guards["retail.daily"] == left
    # A cascade of an append that stopped leaves partitions that lack only the appended columns: not
    # stale (Hive's prefix rule), but the cascade was asked for, so the next plan finishes it.
    prefix_only = PlanBuilder(WIDER, stopped, stale_partitions=lambda key: 0, unfinished_partitions=lambda key: 5,
                              count_partitions=lambda key: 40).build()
    assert [s.summary for s in prefix_only.steps if s.object == "retail.orders"] == [
        "alter columns of retail.orders: finish giving every partition the table's columns"]
    finished = PlanBuilder(WIDER, stopped, stale_partitions=lambda key: 0, unfinished_partitions=lambda key: 0,
                           count_partitions=lambda key: 40).build()
    assert [s.summary for s in finished.steps if s.object == "retail.orders"] == [
        "record schemaflow.version on retail.orders"]
    # A claim from another host may belong to a run still going; one from a live process is one.
    elsewhere = replace(stopped, objects={**stopped.objects, "retail.daily": replace(
        stopped.objects["retail.daily"], version=RUN.for_object(("replace_view",), False).token)})
    assert PlanBuilder(WIDER, elsewhere).build().warnings[0] == (
        "retail.daily: claimed by run run1 on ci-host (pid 4242) since 2026-01-01T00:00:00Z; if that apply has "
        "stopped, apply --take-over finishes its work")
    running = new_run()
    busy = replace(stopped, objects={**stopped.objects, "retail.daily": replace(
        stopped.objects["retail.daily"], version=running.token)})
    assert PlanBuilder(WIDER, busy).build().warnings[0].startswith(f"retail.daily: being applied right now by {running.describe()}")
    # With nothing stale, the half-done table only gets its final stamp.
    quiet = PlanBuilder(WIDER, stopped, stale_partitions=lambda key: 0).build()
    assert [s.kind for s in quiet.steps if s.object == "retail.orders"] == ["set_properties"]


def test_another_runs_claims_are_taken_over_only_when_it_is_gone():
    live = applied(DESIRED)
    def plan_with(claim: Claim):
        held = replace(live.objects["retail.orders"], version=claim.token)
        return PlanBuilder(WIDER, replace(live, objects={**live.objects, "retail.orders": held})).build()

    with pytest.raises(SchemaflowError, match="retail.orders is being modified concurrently by another schemaflow apply"):
        check_claims(plan_with(new_run()))
    elsewhere = plan_with(RUN)
    with pytest.raises(SchemaflowError, match="claimed by an apply on another machine .* run apply --take-over"):
        check_claims(elsewhere)
    check_claims(elsewhere, take_over=True)
    check_claims(plan_with(Claim("r", socket.gethostname(), dead_pid(), "t")))


class _JavaThrowable:
    """Enough of a Java throwable for ``catalog.hive.jvm`` to read its class and message."""

    def __init__(self, name: str, message: str) -> None:
        self.name, self.message = name, message

    def getClass(self):
        return self

    def getName(self) -> str:
        return self.name

    def getMessage(self) -> str:
        return self.message

    def getCause(self):
        return None


class _BrokenConnection(Exception):
    java_exception = _JavaThrowable("org.apache.thrift.transport.TTransportException", "Connection reset")


class _FlakyClient:
    def __init__(self, failures: int) -> None:
        self.failures, self.calls, self.reconnects = failures, 0, 0

    def getAllDatabases(self) -> list[str]:
        self.calls += 1
        if self.calls <= self.failures:
            raise _BrokenConnection()
        return ["retail"]

    def reconnect(self) -> None:
        self.reconnects += 1


def _metastore(client: _FlakyClient, waits: list[float]) -> Metastore:
    metastore = Metastore.__new__(Metastore)
    metastore.msc, metastore.endpoint, metastore.sleep = client, "thrift://metastore:9083", waits.append
    metastore.conf = {"hive.metastore.uris": "thrift://metastore:9083"}  # the HiveConf it connected with
    metastore.lock_guards, metastore.held_locks = False, set()
    return metastore


def test_a_read_is_retried_after_a_broken_connection_with_growing_waits():
    waits: list[float] = []
    client = _FlakyClient(failures=READ_ATTEMPTS - 1)
    assert _metastore(client, waits).retrying(client.getAllDatabases) == ["retail"]
    assert (client.calls, client.reconnects, waits) == (READ_ATTEMPTS, READ_ATTEMPTS - 1, [1.0, 2.0, 4.0])


def test_a_read_gives_up_after_its_attempts():
    waits: list[float] = []
    client = _FlakyClient(failures=READ_ATTEMPTS)
    with pytest.raises(_BrokenConnection):
        _metastore(client, waits).retrying(client.getAllDatabases)
    assert client.calls == READ_ATTEMPTS and len(waits) == READ_ATTEMPTS - 1


def test_other_failures_are_not_retried():
    client = _FlakyClient(failures=0)
    def refused() -> None:
        client.calls += 1
        raise ValueError("no such table")
    with pytest.raises(ValueError):
        _metastore(client, []).retrying(refused)
    assert client.calls == 1


class _Api:
    @staticmethod
    def EnvironmentContext(properties: dict) -> dict:
        return properties


class _GuardlessClient:
    """A metastore server from before compare-and-swap: it applies every alter, guarded or not."""

    def __init__(self, version: str | None = "v1") -> None:
        self.alters: list[dict] = []
        self.version = version

    def getTable(self, database: str, name: str) -> _VersionedTable:
        return _VersionedTable(self.version)

    def alter_table_with_environmentContext(self, database: str, name: str, table: object, context: dict) -> None:
        self.alters.append(context)


def test_a_metastore_that_ignores_guards_is_refused_before_anything_is_claimed():
    client = _GuardlessClient()
    metastore = _metastore(client, [])
    metastore.api, metastore._guards_checked = _Api, False
    with pytest.raises(SchemaflowError, match=r"the metastore \(thrift://metastore:9083\) ignores compare-and-swap"):
        metastore.check_guards("retail.orders")
    [probe] = client.alters
    assert probe["expected_parameter_key"] == VERSION_KEY and probe["expected_parameter_value"].startswith("schemaflow:")


def test_the_probe_of_an_entry_that_holds_no_version_yet_is_guarded_by_a_key_it_holds(monkeypatch):
    """A Delta table's entry holds no version while its claim is in its log alone (``Metastore._claimed_in_log``): the
    metastore refuses a guard on a key the entry lacks, so the probe names one it holds."""
    client = _GuardlessClient(version=None)
    metastore = _metastore(client, [])
    metastore.api, metastore._guards_checked = _Api, False
    monkeypatch.setattr(Metastore, "to_data", lambda self, table: {"parameters": {"spark.sql.sources.provider": "delta",
                                                                                   "comment": "Orders"}})
    with pytest.raises(SchemaflowError, match="ignores compare-and-swap"):
        metastore.check_guards("retail.orders")
    [probe] = client.alters
    assert probe["expected_parameter_key"] == "comment" and probe["expected_parameter_value"].startswith("schemaflow:")


@pytest.mark.parametrize("url, hive, in_process", [
    ("jdbc:derby:;databaseName=/p/.schemaflow/metastore_db;create=true", "2.3.9", True),  # Spark 3.5's embedded one
    ("jdbc:derby:;databaseName=/p/.schemaflow/metastore_db;create=true", "2.3.10", False),  # Spark 4's: it guards
    ("jdbc:derby://db:1527/metastore_db", "2.3.9", False),  # Derby's network server: other processes write too
    ("jdbc:postgresql://db/metastore", "2.3.9", False),
])
def test_only_an_embedded_derby_metastore_without_guards_is_guarded_in_process(url, hive, in_process, monkeypatch):
    """Derby admits one process to an embedded database: nothing writes beside the JVM that opened it,
    so where its metastore (Hive 2.3.9, in Spark 3.5) ignores guards, this process checks them itself."""
    client = _GuardlessClient()
    metastore = _metastore(client, [])
    metastore.api, metastore._guards_checked = _Api, False
    metastore.conf = {"javax.jdo.option.ConnectionURL": url}
    monkeypatch.setattr(Metastore, "hive_version", lambda self: hive)
    assert metastore.guards_in_process is in_process
    if in_process:
        metastore.check_guards("retail.orders")  # nothing to probe
        assert client.alters == []
    else:
        with pytest.raises(SchemaflowError, match="ignores compare-and-swap"):
            metastore.check_guards("retail.orders")


class _VersionedTable:
    def __init__(self, version: str | None) -> None:
        self.parameters = {} if version is None else {VERSION_KEY: version}

    def getParameters(self) -> dict:
        return self.parameters

    def getDbName(self) -> str:
        return "retail"

    def getTableName(self) -> str:
        return "orders"


@pytest.mark.parametrize("stored, expected, refused", [("v1", "v1", False), ("v2", "v1", True), (None, "v1", True)])
def test_a_write_guarded_in_process_is_refused_unless_the_stored_version_is_the_expected_one(stored, expected, refused,
                                                                                              monkeypatch):
    client = _GuardlessClient()
    client.getTable = lambda database, name: _VersionedTable(stored)  # type: ignore[method-assign]
    metastore = _metastore(client, [])
    metastore.api = _Api
    metastore.conf = {"javax.jdo.option.ConnectionURL": "jdbc:derby:;databaseName=metastore_db"}
    monkeypatch.setattr(Metastore, "hive_version", lambda self: "2.3.9")
    written = _VersionedTable("v3")
    if refused:
        with pytest.raises(ConcurrentChange) as caught:
            metastore.alter(written, expected)
        assert (caught.value.key, caught.value.expected, caught.value.found) == ("retail.orders", expected, stored)
        assert client.alters == []  # nothing written
    else:
        metastore.alter(written, expected)
        [context] = client.alters
        assert context["expected_parameter_value"] == expected  # the server's guard goes along all the same


@pytest.mark.parametrize("version, enforces", [("2.3.9", False), ("2.3.10", True), ("2.3.10-SNAPSHOT", True),
                                               ("4.0.1", True), ("2.1.1", False)])
def test_which_embedded_hive_metastore_enforces_guards(version, enforces):
    assert enforces_guards(version) is enforces


def test_the_guard_probe_uses_an_object_that_holds_a_version():
    """An imported table carries no schemaflow.version, and the metastore refuses a guard on a key an
    object lacks: the probe must not pick it (it did, by name order, and every apply after import failed)."""
    live = applied(DESIRED)
    versions = {k: o.version for k, o in live.objects.items()}

    class Probed(VersionedTarget):
        def check_guards(self, key: str) -> None:
            assert self.versions.get(key) is not None, f"probed {key}, which holds no version"
            self.probed = key

    imported = replace(live, objects={k: replace(o, version=None) if k == "retail.daily" else o
                                      for k, o in live.objects.items()})
    target = Probed({k: v for k, v in versions.items() if k != "retail.daily"})
    apply_plan(PlanBuilder(WIDER, imported).build(), target, claim=RUN)
    assert target.probed == "retail.orders"  # the first object, retail.daily, holds no version

    nothing_stamped = replace(live, objects={k: replace(o, version=None) for k, o in live.objects.items()})
    target = Probed({})
    apply_plan(PlanBuilder(WIDER, nothing_stamped).build(), target, claim=RUN)
    assert target.probed == "retail.daily"  # probed once it holds this run's claim
