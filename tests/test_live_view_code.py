"""Live views' SQL, which another client of the metastore writes, held to the rule declared view SQL is held to before
apply has Spark analyse it: planned without a JVM, from live catalogs built here and snapshots.

Spark analyses a live view's SQL when it drops the view, when 3.5 replaces it, and when it creates a view over it
(directly or through other views): tests/test_live_view_code_spark.py measures each with a real function whose class
says when it loads. Here: a drop or a replace of such a view goes through the metastore client; a view created over
one carries the SQL Spark would analyse under its step's id, shown in the plan (text, markdown, JSON), compared as a
reviewed plan's steps are, and refused until approved; and views that call no code plan as they did.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import cmarkgfm
import pytest

from schemaflow.apply.executor import RecordingTarget, apply_plan
from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.catalog.hive.thrift_data import to_model
from schemaflow.code_settings import check_approved
from schemaflow.errors import SchemaflowError
from schemaflow.model import CURRENT_DATABASE, VERSION_KEY, Catalog, View, ViewSql
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.live_code import LiveViews
from schemaflow.plan.plan import Basis, Plan, PlanBuilder
from schemaflow.plan.review_check import differences
from schemaflow.plan.steps import CheckLiveViews, CreateViewAction, DropViewAction, SetParameters, Step
from schemaflow.plan.view_code import plan_code, step_code
from schemaflow.project import load_project
from schemaflow.render.review import Review
from schemaflow.render.text import render
from schemaflow.sql.code_calls import Allowed
from schemaflow.spark_version import spark_version
from schemaflow.workflow import applied_state, desired_state
from tests.catalogs import DESIRED, applied, view
from tests.inprocess import schemaflow

CODE = "SELECT shared.f(order_id) AS order_id, ds FROM retail.orders"  # what their job stored in retail.daily
CALLS = "calls metastore functions (shared.f: the class and jars their entries name)"


def live(*views: View, of: Catalog | None = None) -> Catalog:
    """The live catalog a perfect apply of tests/catalogs' ``DESIRED`` leaves (or ``of``), with ``views`` as another
    client left them."""
    base = of or applied(DESIRED)
    return replace(base, objects={**base.objects, **{v.key: v for v in views}})


def elsewhere(*views: View) -> LiveViews:
    """What a plan against the metastore reads of other databases by name: ``views``, and no view under another name."""
    known = {v.key: v for v in views}
    return LiveViews(live(), lambda keys: {key: known.get(key) for key in keys})


def step_of(plan: Plan, key: str) -> Step:
    [step] = [s for s in plan.steps if s.object == key and s.kind != StepKind.SET_PROPERTIES]
    return step


def statements(step: Step) -> list[str]:
    """Each action of the step's body: the head of each Spark SQL statement it is on Hive, else its class."""
    return [head for a in step.body for head in [sql.split(" (")[0].split("\n")[0] for sql in getattr(a, "statements", ())]
            or [type(a).__name__]]


def test_a_replace_of_a_view_whose_live_sql_calls_code_drops_the_live_entry_through_the_metastore_first():
    altered = replace(applied(DESIRED).objects["retail.daily"], sql=CODE)
    step = step_of(PlanBuilder(DESIRED, live(altered)).build(), "retail.daily")

    assert step.kind == StepKind.REPLACE_VIEW and "SQL changed" in step.summary
    assert statements(step) == ["DropViewAction", "USE `retail`", "CREATE VIEW `retail`.`daily`"]
    assert step.body[0] == DropViewAction("retail.daily", engine=False)
    assert (f"its live entry is dropped through the metastore client first, then the view created anew: Spark would "
            f"analyse its live SQL to replace it, and retail.daily {CALLS}; none of it runs") in step.notes[0]
    assert step.hazards == () and step_code(step) == ()  # nothing of their code runs: nobody has to approve it

    # A live text that calls no code: Spark replaces the view, as before, once the live text is checked unchanged.
    clean = replace(altered, sql="SELECT order_id, ds FROM retail.orders WHERE ds > '2024'")
    step = step_of(PlanBuilder(DESIRED, live(clean)).build(), "retail.daily")
    assert statements(step) == ["CheckLiveViews", "USE `retail`", "CREATE OR REPLACE VIEW `retail`.`daily`"]
    assert step.body[0] == CheckLiveViews("retail.daily", {"retail.daily": ViewSql(clean.sql)})
    assert step.notes == () and step.hazards == () and step_code(step) == ()


def test_a_drop_goes_through_the_metastore_where_the_view_or_any_view_it_reads_calls_code():
    theirs = view("retail.theirs", "SELECT shared.f(order_id) AS x FROM retail.orders", ("x",), ())
    over = view("retail.over", "SELECT x FROM retail.theirs", ("x",), ())
    afar = view("retail.afar", "SELECT y FROM other.src", ("y",), ())  # their view in their own database
    plain = view("retail.plain", "SELECT upper(CAST(order_id AS STRING)) AS u FROM retail.orders", ("u",), ())
    src = view("other.src", "SELECT TRANSFORM(1) USING 'sh -c env' AS y", ("y",), ())
    plan = PlanBuilder(DESIRED, live(theirs, over, afar, plain), allow_destructive=True,
                       live_views=LiveViews(live(theirs, over, afar, plain), lambda keys: {"other.src": src})).build()

    drops = {s.object: s for s in plan.steps if s.kind == StepKind.DROP_VIEW}
    assert [s.object for s in plan.steps] == ["retail.afar", "retail.over", "retail.plain", "retail.theirs"]
    assert drops["retail.plain"].body[:2] == (  # as every drop was, once the live text is checked unchanged
        CheckLiveViews("retail.plain", {"retail.plain": ViewSql(plain.sql)}), DropViewAction("retail.plain"))
    for key, why in [("retail.theirs", f"retail.theirs {CALLS}"), ("retail.over", f"retail.theirs {CALLS}"),
                     ("retail.afar", "other.src runs a command (TRANSFORM ... USING)")]:
        assert drops[key].body[0] == DropViewAction(key, engine=False)
        assert (f"dropped through the metastore client, not Spark's DROP VIEW, which would analyse its live SQL first: "
                f"{why}; none of it runs") in drops[key].notes
        assert drops[key].hazards == ()


@pytest.mark.parametrize("stored, why", [
    # The original text calls nothing; the expanded one, which Spark parses, calls their function.
    (View("retail", "theirs", "SELECT order_id AS x FROM retail.orders", expanded_sql=CODE), f"retail.theirs {CALLS}"),
    # No database stored for its names: Spark resolves `src` in the session's current database, whichever that is.
    (View("retail", "theirs", "SELECT x FROM src", resolves_in=CURRENT_DATABASE),
     "retail.theirs reads names it does not qualify, which Spark resolves in the session's current database"),
    # Its names resolve in the database stored with it: `src` is other.src, which calls their function.
    (View("retail", "theirs", "SELECT x FROM src", resolves_in="other"), f"other.src {CALLS}"),
    (View("retail", "theirs", "SELEC x FROM"), "retail.theirs holds SQL schemaflow cannot read"),
    # A function the project declares, which the metastore holds as another class than declared.
    (View("retail", "theirs", "SELECT shared.mask(order_id) AS x FROM retail.orders"),
     "retail.theirs calls metastore functions (shared.mask"),
])
def test_what_spark_parses_of_a_live_view_is_what_is_held_to_the_rule(stored, why):
    src = view("other.src", "SELECT shared.f(1) AS x", ("x",), ())
    views = LiveViews(live(stored), lambda keys: {key: src if key == "other.src" else None for key in keys},
                      lambda names: {"shared.mask"} & set(names))
    step = step_of(PlanBuilder(DESIRED, live(stored), allow_destructive=True, live_views=views,
                               allowed=Allowed(spark_version(), frozenset({"shared.mask"}))).build(), "retail.theirs")
    assert step.body[0] == DropViewAction("retail.theirs", engine=False)
    assert why in step.notes[1], step.notes


def test_the_live_reader_keeps_the_text_spark_parses_and_the_database_its_names_resolve_in():
    def stored(original: str, expanded: str, **parameters: str) -> View:
        found = to_model({"dbName": "shop", "tableName": "v", "tableType": "VIRTUAL_VIEW", "viewOriginalText": original,
                          "viewExpandedText": expanded, "parameters": parameters})
        assert isinstance(found, View)
        return found

    spark_s = {"view.catalogAndNamespace.numParts": "2", "view.catalogAndNamespace.part.0": "spark_catalog"}
    as_spark_stores = stored("SELECT 1 AS a", "SELECT 1 AS a", **spark_s, **{"view.catalogAndNamespace.part.1": "shop"})
    assert (as_spark_stores.expanded_sql, as_spark_stores.resolves_in) == (None, None)
    apart = stored("SELECT 1 AS a", "SELECT f(1) AS a", **spark_s, **{"view.catalogAndNamespace.part.1": "other"})
    assert (apart.expanded_sql, apart.resolves_in) == ("SELECT f(1) AS a", "other")
    for parameters in ({}, {**spark_s, "view.catalogAndNamespace.part.0": "their_catalog",
                            "view.catalogAndNamespace.part.1": "shop"}, {"view.catalogAndNamespace.numParts": "x"},
                       {**spark_s, "view.catalogAndNamespace.numParts": "999999999999"}):  # read as no more than 2
        assert stored("SELECT 1 AS a", "SELECT 1 AS a", **parameters).resolves_in == CURRENT_DATABASE
    assert stored("SELECT 1 AS a", "SELECT 1 AS a", **{"view.default.database": "shop"}).resolves_in is None


def test_a_view_created_over_a_live_view_that_calls_code_carries_that_sql_under_its_id():
    src = view("other.src", "SELECT shared.f('a') AS x", ("x",), ())
    middle = view("other.middle", "SELECT x FROM other.src", ("x",), ())
    reach = view("retail.reach", "SELECT x FROM other.middle", ("x",), ("other.middle",))
    desired = replace(DESIRED, objects={**DESIRED.objects, "retail.reach": reach})
    step = step_of(PlanBuilder(desired, live(), live_views=elsewhere(src, middle)).build(), "retail.reach")

    check = CheckLiveViews("retail.reach", {"other.middle": ViewSql("SELECT x FROM other.src"),
                                            "other.src": ViewSql("SELECT shared.f('a') AS x")}, f"other.src {CALLS}")
    assert statements(step) == ["CheckLiveViews", "USE `retail`", "CREATE VIEW `retail`.`reach`"]
    assert step.body[0] == check
    [code] = step_code(step)
    assert step.hazards == (f"runs code in the apply job: view retail.reach reads live views whose SQL is code, analysed "
                            f"with it (other.src {CALLS}) in every engine that reads it, apply's Spark first; apply "
                            f"refuses it until the operator approves id {code.id} (SCHEMAFLOW_APPROVED_CODE or "
                            "--approve-code)",)
    with pytest.raises(SchemaflowError, match=f"(?s)the plan has views that run code in apply.*{code.id}"):
        check_approved(plan_code([step]), (), "in apply", "the plan has views")
    check_approved(plan_code([step]), {code.id}, "in apply", "the plan has views")

    # Their view's SQL as it is now is what the id covers: another text, even one that says the same, is another id.
    for other in (replace(src, sql="SELECT shared.f('b') AS x"), replace(src, expanded_sql="SELECT shared.f('a') AS x ")):
        again = step_of(PlanBuilder(desired, live(), live_views=elsewhere(other, middle)).build(), "retail.reach")
        assert step_code(again)[0].id != code.id

    # Over a view the plan creates before it, the new view reads the declared one: its own step's id covers it.
    middle_declared = replace(reach, name="middle", sql="SELECT upper(CAST(order_id AS STRING)) AS x FROM retail.orders",
                              reads=("retail.orders",))
    over = replace(reach, sql="SELECT x FROM retail.middle", reads=("retail.middle",))
    declared = replace(DESIRED, objects={**DESIRED.objects, "retail.middle": middle_declared, "retail.reach": over})
    plan = PlanBuilder(declared, live(), live_views=elsewhere()).build()
    assert not any(isinstance(a, CheckLiveViews) or isinstance(a, DropViewAction) and not a.engine
                   for s in plan.steps for a in s.actions)
    assert plan_code(plan.steps) == ()


def test_the_review_compares_the_live_sql_only_with_a_plan_made_against_the_metastore():
    src = view("other.src", "SELECT shared.f('a') AS x", ("x",), ())
    reach = view("retail.reach", "SELECT x FROM other.src", ("x",), ("other.src",))
    desired = replace(DESIRED, objects={**DESIRED.objects, "retail.reach": reach})
    now = PlanBuilder(desired, live(), live_views=elsewhere(src)).build()
    # Between git refs their view is not known: the step is a plain create, and the approval of the id is the gate.
    between_refs = PlanBuilder(desired, live(), basis=Basis.GIT).build()
    assert not step_of(between_refs, "retail.reach").hazards and differences(between_refs, now) == []
    # Against the metastore, the SQL planned is compared as every action is: theirs changed since is another plan.
    changed = PlanBuilder(desired, live(), live_views=elsewhere(replace(src, sql="SELECT shared.f('b') AS x"))).build()
    assert differences(changed, now) == ["planned differently: create view retail.reach"]
    # A drop through the metastore is another action than the DROP VIEW reviewed, whatever the plan was made against.
    theirs = view("retail.theirs", "SELECT order_id AS x FROM retail.orders", ("x",), ())
    reviewed = PlanBuilder(DESIRED, live(theirs), allow_destructive=True, basis=Basis.GIT).build()
    altered = PlanBuilder(DESIRED, live(replace(theirs, sql=CODE)), allow_destructive=True).build()
    assert differences(reviewed, altered) == ["planned differently: drop view retail.theirs"]


def test_apply_checks_the_live_views_then_drops_the_entry_under_its_claim_before_the_create():
    src = view("other.src", "SELECT shared.f('a') AS x", ("x",), ())
    daily = replace(applied(DESIRED).objects["retail.daily"], sql=CODE, version="v1")
    reading = replace(DESIRED.objects["retail.daily"], sql="SELECT x AS order_id, x AS ds FROM other.src",
                      reads=("other.src",))
    desired = replace(DESIRED, objects={**DESIRED.objects, "retail.daily": reading})
    plan = PlanBuilder(desired, live(daily), live_views=LiveViews(live(daily), lambda keys: {"other.src": src})).build()
    step = step_of(plan, "retail.daily")
    assert statements(step) == ["CheckLiveViews", "DropViewAction", "USE `retail`", "CREATE VIEW `retail`.`daily`"]

    recorded = RecordingTarget()
    apply_plan(replace(plan, steps=(step,), guards={"retail.daily": "v1"}), recorded)
    claim = recorded.actions[0]
    assert isinstance(claim, SetParameters) and claim.object == "retail.daily"
    assert recorded.checked == [{"other.src": ViewSql("SELECT shared.f('a') AS x")}]
    assert recorded.actions[1:3] == [DropViewAction("retail.daily", engine=False), CreateViewAction(reading)]
    assert recorded.guards[1] == claim.set[VERSION_KEY]  # the drop expects this run's claim on the view


@pytest.fixture
def project(example: Path) -> Path:
    """The example project, with a view of theirs left alone in a managed database and one of ours over it."""
    (example / "schemaflow.yaml").write_text((example / "schemaflow.yaml").read_text() + "exclude: [analytics.theirs]\n")
    (example / "schemas/analytics/reach.yaml").write_text(
        "view: analytics.reach\nsql: SELECT x FROM analytics.theirs\n")
    (example / "schemas/analytics/theirs.yaml").write_text("source: analytics.theirs\ncolumns: [{name: x, type: string}]\n")
    return example


def test_the_plan_says_it_in_text_markdown_and_json(project, tmp_path):
    loaded = load_project(project, env={})
    base = applied_state(desired_state(loaded))
    theirs = View("analytics", "theirs", "SELECT shared.mask(name) AS x FROM retail.customers",
                  expanded_sql="SELECT `shared`.`mask`(`name`) AS `x` FROM `retail`.`customers`",
                  resolves_in=CURRENT_DATABASE)
    altered = replace(base.objects["retail.daily_revenue"], sql=CODE.replace("order_id", "customer_id"))
    snapshot = tmp_path / "live.json"
    write_snapshot(replace(base, objects={**{k: o for k, o in base.objects.items() if k != "analytics.reach"},
                                          "analytics.theirs": theirs, "retail.daily_revenue": altered}), snapshot)
    plan = ["--project", str(project), "plan", "--against", str(snapshot)]

    text = schemaflow(*plan)
    assert text.code == 2, text.said
    [code] = plan_code(Plan.from_data(json.loads(schemaflow(*plan, "--format", "json").out)).steps)
    assert text.out.splitlines()[0] == "2 steps on 2 objects, 0 destructive, 1 hazardous, 1 view re-created."
    assert ("note: its live entry is dropped through the metastore client first, then the view created anew: Spark "
            "would analyse its live SQL to replace it, and retail.daily_revenue calls metastore functions (shared.f") in text.out
    assert ("hazard: runs code in the apply job: view analytics.reach reads live views whose SQL is code, analysed with "
            "it (analytics.theirs calls metastore functions (shared.mask") in text.out and code.id in text.out
    assert ("  -- analytics.theirs:\n       SELECT shared.mask(name) AS x FROM retail.customers\n       -- its expanded "
            "text, which Spark analyses:\n       SELECT `shared`.`mask`(`name`) AS `x` FROM `retail`.`customers`\n"
            "       -- its unqualified names resolve in the session's current database") in text.out

    html = cmarkgfm.github_flavored_markdown_to_html(schemaflow(*plan, "--format", "markdown").out,
                                                     options=cmarkgfm.Options.CMARK_OPT_UNSAFE)
    assert "⚠" in html and code.id in html and "dropped through the metastore client first" in html

    steps = json.loads(schemaflow(*plan, "--format", "json").out)["steps"]
    actions = {s["object"]: [a["action"] for a in s["actions"] if a["action"] != "set_database_parameters"] for s in steps}
    assert actions == {"retail.daily_revenue": ["keep_view_partitions", "drop_view", "create_view", "partition_view",
                                                "set_parameters"],
                       "analytics.reach": ["check_live_views", "create_view", "set_parameters"]}
    [check] = [a for s in steps for a in s["actions"] if a["action"] == "check_live_views"]
    assert check["views"] == {"analytics.theirs": {"sql": theirs.sql, "expanded": theirs.expanded_sql,
                                                   "resolves_in": CURRENT_DATABASE}}


def test_views_that_call_no_code_plan_and_show_as_they_did(project, tmp_path):
    """The example project's views over views, created, replaced and dropped, with their live SQL as applied: Spark
    does it all, nothing has an id, and the check of the live SQL before each is bookkeeping, not shown."""
    loaded = load_project(project, env={})
    (project / "schemas/analytics/theirs.yaml").unlink()
    (project / "schemas/analytics/reach.yaml").write_text("view: analytics.reach\nsql: SELECT ds FROM retail.daily_revenue\n")
    desired = desired_state(loaded)
    base = applied_state(desired)
    base = replace(base, objects={k: o for k, o in base.objects.items() if k != "analytics.reach"})
    gone = view("retail.gone", "SELECT order_id FROM retail.orders", ("order_id",), ())
    changed = replace(base.objects["retail.customer_orders"], sql="SELECT 1 AS order_id")
    plan = PlanBuilder(desired, live(gone, changed, of=base), allow_destructive=True,
                       allowed=loaded.settings.allowed_calls).build()
    assert {s.kind for s in plan.steps} >= {StepKind.CREATE_VIEW, StepKind.REPLACE_VIEW, StepKind.DROP_VIEW}
    checks = [a for s in plan.steps for a in s.actions if isinstance(a, CheckLiveViews)]
    assert {c.object for c in checks} == {"analytics.reach", "retail.customer_orders", "retail.gone"}
    assert all(c.code == "" for c in checks) and not any(isinstance(a, DropViewAction) and not a.engine for s in plan.steps for a in s.actions)
    assert plan_code(plan.steps) == () and not any(s.hazards for s in plan.steps)
    shown = render(Review(plan))
    assert "-- metastore" not in shown and "check the live views" in render(Review(plan), verbose=True)
