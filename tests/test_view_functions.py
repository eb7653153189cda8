"""What a view's SQL may call: Spark's built-in functions of the declared release and the functions the project
declares, and nothing else without the operator's approval. Tried route by route as an attacker whose pull request
gets merged: each call that is code makes its step a hazard with an id, in the plan and in the comment as GitHub
renders it, and ``apply --reviewed`` refuses it naming the id, with nothing run, until the operator approves that id.
None of these tests needs a JVM: every refusal comes before one starts (tests/test_view_functions_spark.py runs the
approved applies and a real metastore function).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import cmarkgfm
import git
import pytest

from schemaflow import spark_version as spark_release
from schemaflow.apply.after import cached_before
from schemaflow.catalog.hive import backend as hive_backend
from schemaflow.code_settings import APPROVAL_VARIABLE, function_settings
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.view_code import step_code
from schemaflow.project import load_project
from schemaflow.sql.code_calls import Allowed, code_calls
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.function_calls import Place, function_calls
from schemaflow.sql.spark_functions import CODE_FUNCTIONS, builtins, releases
from schemaflow.sql.views import ViewSqlError
from schemaflow.workflow import check_code, check_plan_code, load_plan
from tests.catalogs import DESIRED, WIDER, applied
from tests.gitrepos import commit, edit, example_repo
from tests.inprocess import schemaflow

ROOT = Path(__file__).resolve().parent.parent
DECLARED = ("functions:\n  shared.mask:\n    class: com.example.udf.Mask\n"
            "    resources: [{jar: 's3a://udfs/mask-1.2.jar'}]\n")


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    """main: the example project, merged and applied long ago."""
    return example_repo(tmp_path / "repo")


@pytest.fixture
def without_pyspark(monkeypatch):
    """As where pyspark is not installed (a pull request's plan job): plans are for the declared release."""
    for where in (spark_release, hive_backend):
        monkeypatch.setattr(where, "installed", lambda: None)


def propose(repo: git.Repo, sql: str, settings: str = "") -> Path:
    """A pull request adding the view ``retail.reach`` of ``sql`` (and ``settings`` to schemaflow.yaml), merged."""
    project = Path(repo.working_tree_dir or "")
    (project / "schemas/retail/reach.yaml").write_text(f"view: retail.reach\nsql: |\n  {sql}\n")
    if settings:
        (project / "schemaflow.yaml").write_text((project / "schemaflow.yaml").read_text() + settings)
    commit(repo, "a harmless-looking view")
    return project


def reviewed(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """What the apply job rebuilds as the reviewed plan: the text plan, and the comment as GitHub shows it."""
    monkeypatch.chdir(project)
    text = schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--out", "reviewed.json")
    assert text.code == 2, text.said
    comment = schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown")
    assert comment.code == 2, comment.said
    return text.out, cmarkgfm.github_flavored_markdown_to_html(comment.out, options=cmarkgfm.Options.CMARK_OPT_UNSAFE)


def apply_reviewed(project: Path, *approved: str) -> tuple[int, str]:
    ran = schemaflow("--project", str(project), "apply", "--reviewed", str(project / "reviewed.json"),
                     "--auto-approve", *(word for id in approved for word in ("--approve-code", id)))
    return ran.code, ran.said


def checked_before_the_metastore(project: Path, approved: str) -> None:
    """What apply checks of the reviewed plan before it reads the metastore (and starts Spark), with ``approved``:
    raises as apply refuses."""
    loaded = load_project(project, env={APPROVAL_VARIABLE: approved})
    check_code(loaded, "in apply")
    check_plan_code(load_plan(project / "reviewed.json"), loaded)


@pytest.mark.parametrize("sql, code", [
    # Spark's script transformation: every read runs the command, with the reader's environment.
    ("SELECT TRANSFORM(order_id) USING 'sh -c env' AS e FROM retail.orders", "runs a command (TRANSFORM ... USING)"),
    # A function another team registered in the metastore: its class, and the jar Spark fetches for it.
    ("SELECT shared.mask(customer_id) AS m FROM retail.orders", "calls metastore functions (shared.mask"),
    # Unqualified and not built in: Spark looks it up in the view's own database.
    ("SELECT obscure(customer_id) AS m FROM retail.orders", "calls metastore functions (retail.obscure"),
    # A name sqlglot knows as a function of its own (JSONExtract), and Spark has not.
    ("SELECT json_extract(CAST(order_id AS STRING), '$.a') AS j FROM retail.orders",
     "calls metastore functions (retail.json_extract"),
    # Back-quoted and in mixed case, beside a built-in in capitals.
    ("SELECT `Shared`.`Mask`(customer_id) AS m, UPPER(CAST(order_id AS STRING)) AS u FROM retail.orders",
     "calls metastore functions (shared.mask"),
    ("SELECT `My_Mask`(customer_id) AS m FROM retail.orders", "calls metastore functions (retail.my_mask"),
    # A keyword sqlglot parses as syntax (an interval), which Spark reads as a function's name at an expression's start.
    ("SELECT interval(customer_id) AS i FROM retail.orders", "calls metastore functions (retail.interval"),
    # Read FROM: a table function of the metastore, and a built-in scalar function Spark does not keep as one.
    ("SELECT r.id AS id FROM shared.ids(3) AS r", "calls metastore functions (shared.ids"),
    ("SELECT u AS u FROM upper('x') AS t(u)", "calls metastore functions (retail.upper"),
    ("SELECT o.order_id, g AS g FROM retail.orders o LATERAL VIEW shared.gen(o.order_id) x AS g",
     "calls metastore functions (shared.gen"),
    # A built-in that loads the class an argument names, where the engine has its connector.
    ("SELECT from_protobuf(CAST(order_id AS BINARY), 'com.example.Message') AS p FROM retail.orders",
     "calls built-ins that load the class or read the file an argument names (from_protobuf)"),
])
def test_a_view_that_calls_code_is_a_hazard_with_an_id_that_apply_refuses_until_approved(repo, monkeypatch, sql, code):
    project = propose(repo, sql)
    text, html = reviewed(project, monkeypatch)
    [step] = [s for s in load_plan(project / "reviewed.json").steps if s.object == "retail.reach"]
    [setting] = step_code(step)

    assert text.splitlines()[0] == "1 step on 1 object, 0 destructive, 1 hazardous."
    assert f"hazard: runs code in the apply job: view retail.reach {code}" in text
    assert f"apply refuses it until the operator approves id {setting.id}" in text
    assert "⚠" in html and setting.id in html and code.split(" (")[0] in html

    status, said = apply_reviewed(project)
    assert status == 1
    assert "the plan has views that run code in apply, and the operator has not approved them; nothing was run" in said
    assert f"{APPROVAL_VARIABLE}='{setting.id}'" in said
    checked_before_the_metastore(project, setting.id)  # approved: apply goes on to the metastore


def test_built_ins_strings_and_names_like_functions_run_nothing(repo, monkeypatch):
    project = propose(repo, (
        "WITH c (n) AS (SELECT 1) SELECT upper('shared.mask(x)') AS s, customer_id AS mask, `date_add`(ds, 1) AS d, "
        "CAST(amount AS DECIMAL(10, 2)) AS a, CAST(ds AS VARCHAR(10)) AS v, transform(array(order_id), x -> x + 1) "
        "AS t, e AS e, r.id AS id, "
        "n AS n, (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM retail.orders) AS p "
        "FROM retail.orders, range(1) AS r, c LATERAL VIEW explode(array(1)) g AS e"))
    text, html = reviewed(project, monkeypatch)
    assert text.splitlines()[0] == "1 step on 1 object, 0 destructive."
    assert "runs code" not in text and "⚠" not in html
    checked_before_the_metastore(project, "")


@pytest.mark.parametrize("release, hazardous", [("3.5", True), ("4.0", False)])
def test_a_function_is_built_in_as_the_declared_release_has_it(repo, monkeypatch, without_pyspark, release, hazardous):
    """string_agg came with Spark 4.0: before it, Spark looks the name up in the metastore."""
    edit(Path(repo.working_tree_dir or "") / "schemaflow.yaml", "spark:\n", f"spark:\n  release: \"{release}\"\n")
    commit(repo, f"Spark {release}")
    project = propose(repo, "SELECT string_agg(CAST(order_id AS STRING), ',') AS ids FROM retail.orders")
    text, _ = reviewed(project, monkeypatch)
    assert ("calls metastore functions (retail.string_agg" in text) is hazardous
    assert text.splitlines()[0] == "1 step on 1 object, 0 destructive" + (", 1 hazardous." if hazardous else ".")


def test_script_transformation_in_its_map_and_reduce_forms_is_refused_where_it_is_written(tmp_path):
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    for form in ("MAP", "REDUCE"):
        (tmp_path / "schemas/retail/reach.yaml").write_text(
            f"view: retail.reach\nsql: |\n  FROM retail.orders {form} order_id USING 'sh -c env' AS e\n")
        ran = schemaflow("--project", str(tmp_path), "validate")
        assert ran.code == 1
        assert ran.err.startswith(f"schemas/retail/reach.yaml:3:22: {form} ... USING is Spark's script "
                                  "transformation: every read of the view runs the command it names"), ran.err
        assert "Traceback" not in ran.err


def test_a_declared_function_is_approved_once_with_its_declaration_and_then_called_freely(repo, monkeypatch):
    project = propose(repo, "SELECT shared.mask(customer_id) AS m FROM retail.orders", DECLARED)
    text, html = reviewed(project, monkeypatch)
    [declaration] = load_project(project, env={}).settings.code

    # The pull request that adds the declaration and a call is a step on the settings with the declaration's id.
    assert text.splitlines()[0] == "2 steps on 1 object and 1 setting, 0 destructive, 1 hazardous."
    assert "~ 2. set functions[shared.mask] in schemaflow.yaml" in text
    assert ("hazard: runs code in the apply job: functions shared.mask: 'class com.example.udf.Mask using jar "
            "s3a://udfs/mask-1.2.jar'") in text and f"approves id {declaration.id}" in text
    assert "view retail.reach calls" not in text  # the call is the declaration's
    assert declaration.id in html and "⚠" in html
    status, said = apply_reviewed(project)
    assert status == 1 and "schemaflow.yaml has settings that run code in apply" in said and declaration.id in said
    checked_before_the_metastore(project, declaration.id)

    # Another class (or jar) under the same name is another id: the approval does not carry over.
    edit(project / "schemaflow.yaml", "com.example.udf.Mask", "com.example.udf.Exfiltrate")
    commit(repo, "another class")
    reviewed(project, monkeypatch)
    status, said = apply_reviewed(project, declaration.id)
    assert status == 1 and "Exfiltrate" in said and declaration.id not in said.split("--approve-code")[0]


def test_a_declared_functions_id_covers_its_name_class_and_resources():
    declared = {"class": "com.example.Mask", "resources": [{"jar": "s3a://u/m.jar"}]}
    [base] = function_settings({"shared.mask": declared})
    others = [function_settings({"shared.mask2": declared}),
              function_settings({"shared.mask": {**declared, "class": "com.example.Mask2"}}),
              function_settings({"shared.mask": {**declared, "resources": [{"jar": "s3a://u/m2.jar"}]}}),
              function_settings({"shared.mask": {**declared, "resources": [{"file": "s3a://u/m.jar"}]}}),
              function_settings({"shared.mask": {"class": "com.example.Mask"}})]
    assert len({base.id, *(setting.id for [setting] in others)}) == 6
    assert function_settings({"Shared.Mask": declared}) == (base,)  # the metastore's names are in lower case


@pytest.mark.parametrize("settings, where, said", [
    ("functions:\n  mask: {class: com.example.Mask}\n", "schemaflow.yaml:8:3",
     "functions 'mask' is not valid: write database.name"),
    ("functions:\n  shared.mask: {class: 'com.example.Mask; rm -rf'}\n", "schemaflow.yaml:8:24",
     "class 'com.example.Mask; rm -rf' is not valid: the Java class the metastore names for the function"),
    ("functions:\n  shared.mask: {class: a.X, resources: [{jar: a, file: b}]}\n", "schemaflow.yaml:8:41",
     "resources[0] names file, jar: it holds at most 1; give each its own entry"),
    ("functions:\n  shared.mask: {resources: []}\n", "schemaflow.yaml:8:16", "missing required key 'class'"),
    ("functions:\n  shared.mask: {class: a.X}\n  Shared.Mask: {class: a.X}\n", "schemaflow.yaml:9:3",
     "Shared.Mask and shared.mask are one function (the metastore keeps its names in lower case): declare it once"),
])
def test_a_declaration_that_is_not_one_is_refused_where_it_is_written(tmp_path, settings, where, said):
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    (tmp_path / "schemaflow.yaml").write_text((ROOT / "schemaflow.yaml").read_text() + settings)
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.code == 1 and f"{where}: {said}" in ran.err, ran.err


def test_each_call_is_found_by_the_name_as_written_where_it_is_written():
    sql = ("SELECT db . `F` /* c */ (x) AS a, upper(y) AS b, `x.y`(z) AS c\n"
           "FROM t JOIN range(3) AS r (n) ON true, LATERAL explode(arr) AS e, cat.db.tvf(1)")
    assert [(c.parts, c.place, c.line, c.col) for c in function_calls(sql)] == [
        (("db", "F"), Place.EXPRESSION, 1, 8), (("upper",), Place.EXPRESSION, 1, 35),
        (("x.y",), Place.EXPRESSION, 1, 50),
        (("range",), Place.TABLE, 2, 13), (("explode",), Place.TABLE, 2, 48), (("cat", "db", "tvf"), Place.TABLE, 2, 67)]
    script = "SELECT TRANSFORM(a, b) USING 'cat' AS (x, y) FROM t"
    assert [(c.place, c.col) for c in function_calls(script)] == [(Place.SCRIPT, 8)]
    # In the CREATE VIEW a plan runs, only its query calls: not the view's column list, nor its TBLPROPERTIES.
    create = ("CREATE VIEW `d`.`v` (`a` COMMENT 'f(x)')\nTBLPROPERTIES ('k' = ${claim})\n"
              "AS SELECT f(x) AS a FROM t")
    assert [(c.name, c.line) for c in function_calls(create)] == [("f", 3)]
    assert function_calls("USE `d`") == () and function_calls("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')") == ()


def test_syntax_before_a_parenthesis_is_no_call_and_every_keyword_sqlglot_reads_so_is_known():
    """Keywords sqlglot parses as syntax before a parenthesis: each is a built-in of every release, or one of these
    few, which Spark's grammar reads as syntax there too (tests/test_view_functions_spark.py asks Spark's parser)."""
    syntax = ("SELECT DISTINCT (a) FROM t LEFT JOIN (SELECT 1 AS a) u USING (a) WHERE a IN (1) AND NOT (b) "
              "GROUP BY ROLLUP (a), CUBE (a) HAVING EXISTS (SELECT 1) UNION ALL (SELECT 2) ORDER BY (a)")
    assert [call.name for call in function_calls(syntax)] == ["not", "exists"]  # as Spark reads them: built-ins
    assert all(code_calls(syntax, "d", Allowed(release)) == () for release in releases())
    every = set.intersection(*(set(builtins(release).functions) for release in releases()))
    words = sorted({word.lower() for word in DIALECT.tokenizer_class.KEYWORDS if word.isidentifier()})
    silent = []
    for word in words:
        try:
            if not function_calls(f"SELECT {word}(x) AS y FROM t") and word not in every:
                silent.append(word)
        except ViewSqlError:
            continue  # refused: a view cannot hold it
    assert silent == ["all", "distinct"]


def test_the_built_in_lists_are_spark_s_less_what_runs_code():
    assert releases() == ((3, 5), (4, 0), (4, 1), (4, 2), (4, 3))
    for release in releases():
        known = builtins(release)
        assert {"upper", "count", "explode", "transform"} <= known.functions and "range" in known.table_functions
        assert not CODE_FUNCTIONS & (known.functions | known.table_functions)
    assert "string_agg" not in builtins((3, 5)).functions and "string_agg" in builtins((4, 0)).functions


def test_a_map_call_sqlglot_cannot_build_is_a_syntax_error_not_a_traceback(tmp_path):
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    (tmp_path / "schemas/retail/reach.yaml").write_text(
        "view: retail.reach\nsql: SELECT map(order_id) AS m FROM retail.orders\n")
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.code == 1 and "schemas/retail/reach.yaml:2:6: SQL syntax error: sqlglot cannot parse this SQL" in ran.err


def test_after_apply_spark_refreshes_no_view_which_would_run_its_functions():
    """REFRESH TABLE of a view has Spark analyse it, running the functions its SQL calls (a live view's may be code
    nobody approved); Spark keeps no metadata of a view to refresh."""
    plan = PlanBuilder(WIDER, applied(DESIRED)).build()
    assert [(s.object, s.kind) for s in plan.steps] == [
        ("retail.orders", StepKind.ADD_COLUMNS), ("retail.daily", StepKind.REPLACE_VIEW),
        ("retail.top", StepKind.REPLACE_VIEW)]
    assert cached_before(plan) == ("retail.orders",)
