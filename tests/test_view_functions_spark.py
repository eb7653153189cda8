"""What a view's SQL may call, against Spark itself: the built-in functions of the installed release are the list
schemaflow keeps for it, its parser finds no call the finder misses, and a function another team registered in the
metastore, with a jar of its own, is neither fetched nor loaded by plan or apply until the operator approves the view
that calls it (nor when a live view calls it).

The function is real: a Hive UDF the test compiles (javac), whose class writes a marker file as it loads, registered
with ``CREATE FUNCTION db.f AS 'class' USING JAR 'http://...'`` and served by an HTTP server of the test, which
counts what it serves. Each schemaflow command runs as a user runs it, a process and a JVM of its own.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from schemaflow.catalog.hive.builtin_functions import registered
from schemaflow.catalog.hive.jvm import JAVA_ERRORS
from schemaflow.catalog.hive.local_server import state_directory
from schemaflow.project import load_project
from schemaflow.spark_version import installed, release_text
from schemaflow.sql.code_calls import Allowed, Reach, code_calls
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.function_calls import Place, function_calls
from schemaflow.sql.spark_functions import allowed, builtins
from schemaflow.sql.views import ViewSqlError
from tests.marker_udf import Served, marker_jar as served_marker, spark_sql
from tests.projects import schemaflow

pytestmark = pytest.mark.spark


@pytest.fixture
def marker_jar(tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    """A jar of the UDF ``marker.Marker``, served over HTTP, and the file its class writes as it loads."""
    with served_marker(tmp_path) as served:
        yield served


def test_the_installed_releases_built_in_functions_are_the_list_schemaflow_keeps_for_it(spark):
    release = installed()
    assert release is not None
    kept = json.loads(files("schemaflow.sql").joinpath("spark_functions.json").read_text())[release_text(release[0])]
    assert allowed(registered(spark)) == {"functions": kept["functions"], "table_functions": kept["table_functions"]}
    assert builtins(release[0]).functions == frozenset(kept["functions"])


# Spark's parser prints an unresolved function as 'name(...), a table function as UnresolvedTableValuedFunction [parts]
# and a script transformation as ScriptTransformation.
_SPARK_CALL = re.compile(r"'((?:`[^`]*`|[\w$]+)(?:\.(?:`[^`]*`|[\w$]+))*)\(")
_SPARK_TABLE_FUNCTION = re.compile(r"UnresolvedTableValuedFunction \[([^\]]*)\]")
# Read by Spark's parser and by the finder: every route of a call, and SQL around parentheses that is no call.
CORPUS = [
    "SELECT CAST(a AS VARCHAR(10)) AS v, CAST(a AS CHAR(3)) AS c, CAST(a AS DECIMAL(10, 2)) AS d, a::varchar(5) AS e FROM t",
    'SELECT timestampadd(HOUR, 1, a) AS t FROM t',
    'SELECT timestampdiff(DAY, a, b) AS d FROM t',
    'SELECT dateadd(HOUR, 1, a) AS t, date_add(DAY, 1, a) AS u FROM t',
    'SELECT datediff(DAY, a, b) AS d, date_diff(DAY, a, b) AS e FROM t',
    'SELECT timediff(DAY, a, b) AS d FROM t',
    'SELECT any_value(a) IGNORE NULLS AS x FROM t',
    'SELECT count(*) AS n FROM t',
    "SELECT listagg(a, ',') WITHIN GROUP (ORDER BY a) AS l FROM t",
    "SELECT a FROM t WHERE a ILIKE ANY ('x', 'y')",
    "SELECT a FROM t WHERE a LIKE ALL ('x')",
    'SELECT current_timestamp AS c, current_schema() AS s, session_user AS u FROM t',
    'SELECT a FROM t WHERE a IS DISTINCT FROM (1)',
    'SELECT db.`F`(x) AS a, upper(y) AS b, `x.y`(z) AS c FROM t JOIN range(3) AS r (n) ON true, LATERAL explode(arr) AS e, cat.db.tvf(1)',
    'SELECT e FROM t LATERAL VIEW OUTER db.gen(arr) x AS e',
    "SELECT TRANSFORM(a, b) USING 'cat' AS (x, y) FROM t",
    "FROM t SELECT TRANSFORM(a) USING 'sh -c env' AS e",
    "MAP a USING 'cat' AS (b) FROM t",
    "SELECT cast(a AS int) AS c, extract(year FROM d) AS e, string_agg(a, ',') AS s, trim(BOTH 'x' FROM s) AS tr, transform(arr, x -> x + 1) AS t2, json_extract(a, '$.b') AS j, from_protobuf(a, 'M') AS pb FROM t",
    "WITH c (n) AS (SELECT 1) SELECT 'f(x)' AS s, f AS g FROM c",
    'SELECT interval(x) AS a, merge(x) AS b FROM t',
    'SELECT count(*) FILTER (WHERE a > 1) AS n FROM t',
    'SELECT `Shared`.`Mask`(x) AS m, spark_catalog.shared.mask(x) AS n, SHARED.MASK(x) AS o FROM t',
    'SELECT * FROM VALUES (1, 2) AS v(a, b)',
    'SELECT * FROM t JOIN VALUES (1) AS v(a) ON true',
    'SELECT * FROM t, VALUES (1) AS v(a)',
    'SELECT a FROM t WHERE a IN (VALUES (1))',
    'SELECT ALL (a) FROM t',
    'SELECT a FROM t UNION ALL (SELECT 1)',
    'SELECT a FROM t UNION DISTINCT (SELECT 1)',
    'SELECT DISTINCT (a) FROM t',
    'SELECT count(DISTINCT (a)) AS n FROM t',
    'SELECT a FROM t GROUP BY ROLLUP (a), CUBE (a)',
    'SELECT a FROM t GROUP BY a, ROLLUP (a)',
    'SELECT a FROM t GROUP BY GROUPING SETS ((a), (b))',
    'SELECT * FROM t LEFT JOIN (SELECT 1 AS a) u ON true',
    'SELECT * FROM t CROSS JOIN (SELECT 1 AS a) u',
    'SELECT * FROM t NATURAL JOIN (SELECT 1 AS a) u',
    'SELECT * FROM t LEFT SEMI JOIN (SELECT 1 AS a) u ON true',
    'SELECT * FROM t, LATERAL (SELECT t.a) u',
    'SELECT * FROM t JOIN LATERAL (SELECT t.a) u ON true',
    'SELECT (SELECT 1) AS x FROM t',
    'SELECT * FROM (SELECT 1 AS a) s',
    'SELECT a FROM t EXCEPT (SELECT 1)',
    'SELECT a FROM t INTERSECT (SELECT 1)',
    'SELECT rollup(a) AS r FROM t',
    'SELECT cube(a) AS r FROM t',
    'SELECT values(a) AS r FROM t',
    'SELECT lateral(a) AS r FROM t',
    'SELECT a FROM t WHERE NOT (a > 1)',
    'SELECT CASE WHEN (a > 1) THEN (1) ELSE (2) END AS c FROM t',
    'SELECT a FROM t WHERE a BETWEEN (1) AND (2)',
    "SELECT a FROM t WHERE a LIKE ('x')",
    'SELECT a FROM t WHERE a IS NOT NULL AND (a > 1)',
    'SELECT a AS x, b FROM t ORDER BY (a) LIMIT (1)',
    'SELECT a FROM t TABLESAMPLE (10 PERCENT)',
    "SELECT * FROM t PIVOT (sum(a) FOR b IN ('x', 'y'))",
    'SELECT a FROM t WHERE a = ANY (SELECT 1)',
    'SELECT a FROM t WHERE EXISTS (SELECT 1)',
    'SELECT a, rank() OVER (ORDER BY a) AS r FROM t QUALIFY (r = 1)',
    "SELECT TRANSFORM(a) USING 'cat' AS (x STRING) FROM t",
    'SELECT a FROM t DISTRIBUTE BY (a) SORT BY (a)',
    'SELECT a FROM t CLUSTER BY (a)',
    'SELECT date_add(a, 1) AS d, timestamp(a) AS s, date(a) AS e, int(a) AS i, decimal(a) AS f, binary(a) AS g FROM t',
    'SELECT a :: int AS x, a::decimal(10, 2) AS y FROM t',
    "SELECT struct(a AS x) AS s, array(1) AS a2, map(1, 2) AS m, named_struct('a', 1) AS n FROM t",
    'SELECT current_date AS d, current_timestamp() AS t, current_user() AS u, user() AS v FROM t',
    'SELECT first(a) IGNORE NULLS AS f, last(a, true) AS l FROM t',
    'SELECT a FROM t WINDOW w AS (PARTITION BY a)',
    "SELECT left(a, 1) AS l, right(a, 1) AS r, replace(a, 'x') AS p, filter(arr, x -> x > 0) AS f FROM t",
    'SELECT a FROM t WHERE a IN (SELECT b FROM u)',
    'SELECT * FROM explode(array(1, 2))',
    "SELECT * FROM t LATERAL VIEW json_tuple(a, 'x') j AS x",
    'SELECT * FROM range(1, 10, 2) AS r(id)',
    'SELECT timestampadd(HOUR, 1, a) AS t, datediff(DAY, a, b) AS d FROM t',
    'SELECT try_cast(a AS int) AS x FROM t',
    "SELECT position('a' IN a) AS p, overlay(a PLACING 'x' FROM 1) AS o, substring(a FROM 1 FOR 2) AS s FROM t",
    'SELECT any_value(a) AS x, percentile_disc(0.5) WITHIN GROUP (ORDER BY a) AS p, mode() WITHIN GROUP (ORDER BY a) AS m FROM t',
    'SELECT a FROM t WHERE (a, b) IN ((1, 2))',
    "SELECT IF(a > 1, 'x', 'y') AS i, NULLIF(a, 1) AS n, COALESCE(a, 1) AS c FROM t",
    'SELECT a FROM t ORDER BY a NULLS FIRST',
    "SELECT interval 1 day AS i, interval '1' hour AS j FROM t",
    "SELECT x'00' AS b, 1e3 AS e, -a AS n FROM t",
    'SELECT a FROM t HAVING (count(*) > 1)',
    'SELECT `select`(a) AS x FROM t',
    'SELECT db.`select`(a) AS x FROM t',
    'SELECT a.b.c.d(x) AS x FROM t',
]


def spark_calls(spark, sql: str) -> set[str] | None:
    """The functions and scripts Spark's parser finds in ``sql`` (None: it refuses the SQL); nothing is resolved."""
    try:
        plan = str(spark._jsparkSession.sessionState().sqlParser().parsePlan(sql).toString())
    except JAVA_ERRORS:  # the parser refuses it
        return None
    found = {name.replace("`", "").lower() for name in _SPARK_CALL.findall(plan)}
    found |= {".".join(part.strip() for part in parts.split(",")).lower() for parts in _SPARK_TABLE_FUNCTION.findall(plan)}
    return found | ({"TRANSFORM ... USING"} if "ScriptTransformation" in plan else set())


def finder_calls(sql: str) -> set[str] | None:
    try:
        return {"TRANSFORM ... USING" if call.place == Place.SCRIPT else call.name for call in function_calls(sql)}
    except ViewSqlError:
        return None


@pytest.mark.parametrize("sql", CORPUS)
def test_every_call_spark_s_parser_finds_the_finder_finds_and_the_rest_are_built_in(spark, sql):
    spark_found, found = spark_calls(spark, sql), finder_calls(sql)
    if spark_found is None or found is None:  # Spark refuses it, or sqlglot does (and validate with it)
        return
    release = installed()[0]  # type: ignore[index]
    assert spark_found - found <= builtins(release).functions  # Spark's built-in where the finder reads syntax (BETWEEN)
    # What the finder reads as a call where Spark reads syntax is no code: a built-in (NOT (a)), or grammar (TIMESTAMPADD).
    assert not {found.call.name for found in code_calls(sql, "d", Allowed(release)) if found.call.name not in spark_found
                and found.reach != Reach.SCRIPT}


def test_a_keyword_spark_reads_as_a_functions_name_is_a_call_or_refused(spark):
    """Each keyword of sqlglot's Spark dialect, before a parenthesis at the start of an expression: where Spark's parser
    reads a call of it, the finder finds it, or sqlglot refuses the SQL (so validate refuses the view)."""
    missed = []
    for word in sorted({word.lower() for word in DIALECT.tokenizer_class.KEYWORDS if word.isidentifier()}):
        sql = f"SELECT {word}(x) AS y FROM t"
        spark_found, found = spark_calls(spark, sql), finder_calls(sql)
        if spark_found and word in spark_found and found is not None and word not in found:
            missed.append(word)
    assert missed == []


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A project managing the database shop, with its own embedded metastore: a table, a view that calls the
    metastore function shared.f, one that runs a command, and one of built-ins alone."""
    project = tmp_path / "project"
    (project / "schemas/shop").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text('spark: {master: "local[1]"}\ndatabases: [shop]\nexclude: [shop.theirs]\n')
    (project / "schemas/shop/items.yaml").write_text(
        "table: shop.items\nformat: parquet\ncolumns: [{name: name, type: string}]\n")
    (project / "schemas/shop/masked.yaml").write_text("view: shop.masked\nsql: SELECT shared.f(name) AS m FROM shop.items\n")
    (project / "schemas/shop/script.yaml").write_text(
        "view: shop.script\nsql: SELECT TRANSFORM(name) USING 'cat' AS c FROM shop.items\n")
    (project / "schemas/shop/plain.yaml").write_text("view: shop.plain\nsql: SELECT upper(name) AS n FROM shop.items\n")
    return project


def test_a_metastore_function_is_neither_fetched_nor_loaded_until_the_operator_approves_the_view(shop, marker_jar):
    served, marker = marker_jar
    # Another team's function, and a view of theirs in the managed database that calls it (left alone: exclude).
    spark_sql(shop, "CREATE DATABASE shared", "CREATE DATABASE shop",
              f"CREATE FUNCTION shared.f AS 'marker.Marker' USING JAR '{served.url('marker.jar')}'",
              "CREATE VIEW shop.theirs AS SELECT shared.f('x') AS y")
    assert marker.exists() and served.requests == ["/marker.jar"]  # their job loaded it
    marker.unlink()
    served.requests.clear()
    resources = state_directory(load_project(shop, env={}).settings) / "hive-resources"

    planned = schemaflow(shop, "plan", "--out", "plan.json")
    assert planned.returncode == 2, planned.stderr
    plan = planned.stdout
    ids = dict(re.findall(r"view (shop\.\w+) .*apply refuses it until the operator approves id ([0-9a-f]{32})", plan))
    assert ids.keys() == {"shop.masked", "shop.script"}, plan
    assert "view shop.masked calls metastore functions (shared.f: the class and jars their entries name)" in plan
    assert "view shop.script runs a command (TRANSFORM ... USING)" in plan
    assert plan.count("not checked with Spark before apply: Spark would run the code its SQL calls") == 2
    assert "not managed: shop.theirs" in plan
    assert not marker.exists() and served.requests == [] and not any(resources.glob("*"))

    # Refused, nothing fetched or loaded: unapproved, as planned, and with the other view's code alone approved (Spark
    # checks that view, which runs no command to be created).
    for refused in (schemaflow(shop, "apply", "--auto-approve"), schemaflow(shop, "apply", "plan.json", "--auto-approve"),
                    schemaflow(shop, "apply", "--auto-approve", "--approve-code", ids["shop.script"])):
        assert refused.returncode == 1, refused.stdout
        assert "the plan has views that run code in apply, and the operator has not approved them" in refused.stderr
        assert ids["shop.masked"] in refused.stderr
        assert not marker.exists() and served.requests == [] and not any(resources.glob("*"))

    approved = schemaflow(shop, "apply", "--auto-approve", env={"SCHEMAFLOW_APPROVED_CODE": " ".join(ids.values())})
    assert approved.returncode == 0, approved.stderr
    assert marker.exists() and served.requests  # the approved run: Spark fetched the jar and loaded the class
    assert "No changes" in schemaflow(shop, "plan").stdout  # applied as planned


def test_a_declared_function_runs_only_as_declared_and_approved(shop, marker_jar):
    served, marker = marker_jar
    spark_sql(shop, "CREATE DATABASE shared",
              f"CREATE FUNCTION shared.f AS 'marker.Marker' USING JAR '{served.url('marker.jar')}'")
    (shop / "schemas/shop/script.yaml").unlink()
    settings = shop / "schemaflow.yaml"
    declared = settings.read_text()
    # Declared with another jar than the metastore's: approved, and still not what the metastore would run.
    settings.write_text(declared + "functions:\n  shared.f:\n    class: marker.Marker\n"
                        f"    resources: [{{jar: '{served.url('other.jar')}'}}]\n")
    [declaration] = load_project(shop, env={}).settings.code
    refused = schemaflow(shop, "apply", "--auto-approve", "--approve-code", declaration.id)
    assert refused.returncode == 1
    assert "it calls shared.f, and the metastore holds it as class 'marker.Marker', jar" in refused.stdout + refused.stderr
    assert not marker.exists() and served.requests == []

    # Declared as the metastore holds it: approved once, and the view that calls it needs no approval of its own.
    settings.write_text(declared + "functions:\n  shared.f:\n    class: marker.Marker\n"
                        f"    resources: [{{jar: '{served.url('marker.jar')}'}}]\n")
    [declaration] = load_project(shop, env={}).settings.code
    unapproved = schemaflow(shop, "apply", "--auto-approve")
    assert unapproved.returncode == 1 and declaration.id in unapproved.stderr
    assert not marker.exists() and served.requests == []
    applied = schemaflow(shop, "apply", "--auto-approve", "--approve-code", declaration.id)
    assert applied.returncode == 0, applied.stderr
    assert "view shop.masked calls" not in applied.stdout and marker.exists()
