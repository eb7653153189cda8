"""Moving a project from one catalog to another (``plan.moving``), planned without a catalog: what the planner makes
of the objects the catalog moved from holds (register steps, views created, tables refused, entries forgotten only when
asked and allowed), what the plan claims and records of them, and how the settings name the catalog moved from."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.apply.executor import ApplyError, RecordingTarget, apply_plan
from schemaflow.capabilities import refusals
from schemaflow.catalog.backends import backend_capabilities, settings_problems, source_project
from schemaflow.model import Catalog, Column, IcebergState, Table, View, fingerprint
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.moving import Moving
from schemaflow.plan.plan import ABSENT, Plan, PlanBuilder, applied
from schemaflow.plan.settings_changes import settings_steps
from schemaflow.plan.steps import DropTableAction, ForgetEntryAction, IcebergCommit, RegisterTableAction
from schemaflow.project import load_project

OLD = "thrift://old:9083"
NOUN = "the metastore moved from (metastore.moving_from.type hive)"
TARGET = "the Iceberg REST catalog (metastore.type iceberg_rest)"
LOCATION = "file:/lake/sales/orders/metadata/00003-abc.metadata.json"


def orders(*columns: Column, **changes: object) -> Table:
    return Table("sales", "orders", columns or (Column("id", "bigint"), Column("amount", "double")), format="iceberg",
                 data_source=True, **changes)  # type: ignore[arg-type]


DECLARED = Catalog(("sales",), {"sales.orders": orders(),
                                "sales.big": View("sales", "big", "SELECT id FROM sales.orders WHERE amount > 100")})


def held(table: Table, uuid: str = "uuid-1", location: str = LOCATION) -> Table:
    """``table`` as a catalog holds it after a complete apply: stamped, with its Iceberg state."""
    stamped = applied(table, ())
    assert isinstance(stamped, Table)
    return replace(stamped, iceberg=IcebergState(uuid, 0, 0, 0, 2, location))


def source(*objects: Table | View) -> Catalog:
    return Catalog(("sales",), {o.key: o for o in objects})


def moving(catalog: Catalog, forget: bool = False, registers: bool = True) -> Moving:
    return Moving(catalog, OLD, NOUN, TARGET, registers, True, forget)


OLD_VIEW = View("sales", "big", "SELECT id FROM sales.orders WHERE amount > 100")


def test_an_iceberg_table_the_old_catalog_holds_is_registered_with_its_hazards_and_its_view_created() -> None:
    old = held(orders())
    plan = PlanBuilder(DECLARED, Catalog(), moving=moving(source(old, OLD_VIEW))).build()
    assert [(s.kind, s.object) for s in plan.steps] == [
        (StepKind.CREATE_DATABASE, "sales"), (StepKind.REGISTER_TABLE, "sales.orders"), (StepKind.CREATE_VIEW, "sales.big")]
    register = plan.steps[1]
    assert register.summary == f"register Iceberg table sales.orders from {NOUN} (2 columns)"
    assert register.body == (RegisterTableAction("sales.orders", LOCATION, old.version, OLD),)
    assert not register.blocked and not register.destructive
    assert register.hazards[0].startswith(f"both catalogs name the same files from this step on: a commit through {NOUN} "
                                          "after it is not seen here")
    assert "stop every writer that uses" in register.hazards[0] and "metastore.moving_from.forget" in register.hazards[0]
    assert "a commit through" in register.hazards[1] and "is not carried over" in register.hazards[1]
    assert "no data or metadata file is written or copied" in register.notes[0]
    # Its stamp follows it, as the last write of a created object, expecting the version its metadata holds.
    assert register.stamp is not None and register.stamp.set["schemaflow.version"] == fingerprint(orders())
    view = plan.steps[2]
    assert f"created from its declaration: {NOUN} holds the view sales.big too" in " ".join(view.notes)
    # The catalog moved to lacks both: nothing to claim there, and each was absent when planned.
    assert plan.guards == {}
    assert plan.fingerprints == {"sales.big": ABSENT, "sales.orders": ABSENT}
    assert plan.warnings == (f"moving from {NOUN}: 2 moved objects keep their entries there (sales.big, sales.orders), "
                             "readable and writable through it: set metastore.moving_from.forget: true to plan their "
                             "removal once their readers and writers use the new catalog",)
    assert Plan.from_data(json.loads(plan.to_json())) == plan


def test_the_declared_changes_of_a_moved_table_follow_its_register_as_a_commit_on_its_metadata() -> None:
    old = held(orders())
    wanted = replace(DECLARED, objects={**DECLARED.objects, "sales.orders": orders(
        Column("id", "bigint"), Column("amount", "double"), Column("note", "string"))})
    plan = PlanBuilder(wanted, Catalog(("sales",)), moving=moving(source(old))).build()
    assert [(s.kind, s.object) for s in plan.steps] == [
        (StepKind.REGISTER_TABLE, "sales.orders"), (StepKind.ALTER_ICEBERG_TABLE, "sales.orders"),
        (StepKind.CREATE_VIEW, "sales.big")]
    register, alter = plan.steps[:2]
    assert register.stamp is None  # the commit after it writes the stamp
    [commit] = alter.body
    assert isinstance(commit, IcebergCommit) and commit.requires == old.iceberg and not commit.create
    assert [c.name for c in commit.table.columns] == ["id", "amount", "note"]


def test_a_table_the_new_catalog_holds_is_planned_against_it_and_no_longer_moved() -> None:
    old, now = held(orders()), held(orders())
    plan = PlanBuilder(DECLARED, Catalog(("sales",), {"sales.orders": now, "sales.big": OLD_VIEW}),
                       moving=moving(source(old, OLD_VIEW))).build()
    assert [s.kind for s in plan.steps if s.object == "sales.orders"] == []
    assert any("keep their entries there (sales.big, sales.orders)" in w for w in plan.warnings)


@pytest.mark.parametrize("have, registers, said", [
    (Table("sales", "orders", (Column("id", "bigint"), Column("amount", "double"))), True,
     "sales.orders is a parquet table in the metastore moved from (metastore.moving_from.type hive), and only Iceberg "
     "tables move in this release: created here it would be empty, its rows left behind."),
    (held(orders()), False,
     f"sales.orders is an Iceberg table in {NOUN}, and {TARGET} cannot register a table by its metadata file in this "
     "release"),
])
def test_a_table_that_cannot_move_is_blocked_rather_than_created_empty(have: Table, registers: bool, said: str) -> None:
    plan = PlanBuilder(DECLARED, Catalog(), moving=moving(source(have), registers=registers)).build()
    create = next(s for s in plan.steps if s.object == "sales.orders")
    assert create.kind == StepKind.CREATE_TABLE and create.blocked is not None and create.blocked.startswith(said)


def test_old_entries_are_forgotten_only_when_asked_once_the_new_catalog_holds_the_same_table_and_only_if_allowed() -> None:
    old = held(orders())
    live = Catalog(("sales",), {"sales.orders": held(orders()), "sales.big": applied(DECLARED.objects["sales.big"], ())})
    assert PlanBuilder(DECLARED, live, moving=moving(source(old, OLD_VIEW))).build().steps == ()
    plan = PlanBuilder(DECLARED, live, moving=moving(source(old, OLD_VIEW), forget=True)).build()
    assert [(s.kind, s.object, s.summary) for s in plan.steps] == [
        (StepKind.FORGET_ENTRY, "sales.big", f"forget view sales.big in {NOUN}"),
        (StepKind.FORGET_ENTRY, "sales.orders", f"forget table sales.orders in {NOUN}")]
    assert all(s.destructive and s.blocked == "destructive: run with --allow-destructive to allow it" for s in plan.steps)
    assert plan.steps[1].body == (ForgetEntryAction("sales.orders", ObjectType.TABLE, old.version, OLD),)
    assert "its data and metadata files are the moved table's" in plan.steps[1].notes[0]
    # The entries are another catalog's: nothing of the new one is claimed or fingerprinted for them.
    assert plan.guards == {} and plan.fingerprints == {} and not any("keep their entries" in w for w in plan.warnings)
    allowed = PlanBuilder(DECLARED, live, allow_destructive=True, moving=moving(source(old, OLD_VIEW), forget=True)).build()
    assert [s.blocked for s in allowed.steps] == [None, None]

    # Another table of the name (another uuid): not the moved one, so its old entry is not forgotten.
    other = replace(live, objects={**live.objects, "sales.orders": held(orders(), uuid="uuid-2")})
    plan = PlanBuilder(DECLARED, other, moving=moving(source(old), forget=True)).build()
    assert [s.kind for s in plan.steps] == []
    assert (f"sales.orders is held by {NOUN} and by {TARGET} as different tables: nothing moves it, and its old entry "
            "is not forgotten") in plan.warnings


def test_a_writer_that_cannot_register_stops_the_step_and_one_without_the_old_catalog_cannot_forget() -> None:
    plan = PlanBuilder(DECLARED, Catalog(("sales",), {"sales.big": applied(DECLARED.objects["sales.big"], ())}),
                       moving=moving(source(held(orders()), OLD_VIEW))).build()
    with pytest.raises(ApplyError) as caught:
        apply_plan(plan, RecordingTarget())
    assert "cannot register a table another catalog holds (its backend does not): nothing of this step ran" in str(
        caught.value.__cause__)
    live = Catalog(("sales",), {"sales.orders": held(orders())})
    forget = PlanBuilder(DECLARED, live, allow_destructive=True, moving=moving(source(held(orders())), forget=True))
    with pytest.raises(ApplyError) as caught:
        apply_plan(replace(forget.build(), steps=tuple(s for s in forget.build().steps
                                                         if s.kind == StepKind.FORGET_ENTRY)), RecordingTarget())
    assert f"this step drops its entry in {OLD}, which this apply was not given" in str(caught.value.__cause__)
    source_writer = RecordingTarget()
    apply_plan(replace(forget.build(), steps=tuple(s for s in forget.build().steps if s.kind == StepKind.FORGET_ENTRY)),
               RecordingTarget(), source=source_writer)
    assert (source_writer.actions, source_writer.guards) == ([DropTableAction("sales.orders")], [held(orders()).version])


def test_validate_says_a_table_of_a_kind_the_new_catalog_cannot_hold_cannot_move_in_this_release() -> None:
    parquet = Catalog(("sales",), {"sales.t": Table("sales", "t", (Column("id", "bigint"),))})
    [problem] = refusals(backend_capabilities("iceberg_rest"), "iceberg_rest", parquet, "hive")
    assert problem.message == (
        "sales.t is a parquet table, and the Iceberg REST catalog (metastore.type iceberg_rest) holds iceberg tables and "
        "views only: moving from the catalog of metastore.moving_from (type hive), a parquet table there cannot move "
        "in this release (only Iceberg tables are registered): keep it in that catalog, declared in a project of its "
        "own, or declare format: iceberg for a new, empty table")


def _project(root: Path, metastore: str) -> Path:
    (root / "schemas").mkdir(parents=True)
    (root / "schemaflow.yaml").write_text(f"metastore:\n{metastore}")
    return root


def test_the_catalog_moved_from_is_named_in_the_settings_and_checked_against_its_own_backend(tmp_path: Path) -> None:
    root = _project(tmp_path, "  type: iceberg_rest\n  uri: http://new:8181\n  moving_from:\n    type: hive\n"
                              "    uri: thrift://old:9083\n    forget: true\n")
    project = load_project(root, env={})
    assert project.settings.moving_from == {"type": "hive", "uri": "thrift://old:9083", "forget": True}
    assert settings_problems(project) == []
    old = source_project(project)
    assert old is not None and (old.settings.metastore_type, old.settings.metastore_uri) == ("hive", "thrift://old:9083")
    assert old.settings.moving_from is None
    embedded = source_project(load_project(_project(tmp_path / "e", "  type: iceberg_rest\n  uri: http://new:8181\n"
                                                    "  moving_from: {type: hive}\n"), env={}))
    assert embedded is not None and embedded.settings.metastore_uri is None
    assert embedded.settings.warehouse_dir == str(tmp_path / "e" / ".schemaflow" / "warehouse")

    wrong = load_project(_project(tmp_path / "w", "  type: iceberg_rest\n  uri: http://new:8181\n  moving_from:\n"
                                                  "    type: hive\n    warehouse: w1\n"), env={})
    assert [str(p) for p in settings_problems(wrong)] == [
        "schemaflow.yaml:6:5: unknown key 'warehouse' (expected one of: guard, local_server, type, uri)"]


def test_a_pull_request_that_starts_a_move_shows_it_as_a_settings_step_with_its_hazard() -> None:
    before = {"metastore": {"type": "hive"}}
    after = {"metastore": {"type": "iceberg_rest", "uri": "http://new:8181", "moving_from": {"type": "hive"}}}
    steps = {s.values[0]: s.hazards for s in settings_steps(before, after)}
    assert steps['metastore.moving_from.type: (not set) -> "hive"'] == (
        "changes the catalog the project moves from: plan reads it, and registers its Iceberg tables in the project's "
        "catalog, where a writer still using the old entries forks those tables (see Moving between catalogs)",)
    assert "changes the catalog backend apply reads and writes through" in steps[
        'metastore.type: "hive" -> "iceberg_rest"'][0]
