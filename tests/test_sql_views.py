"""View SQL analysis with sqlglot: one SELECT, what it reads, what it outputs, and where errors are."""
from __future__ import annotations

import pytest

from schemaflow.sql.views import ViewAnalysis, ViewSqlError, analyze_view, normalize_sql, parse_select, tables_read

SCHEMA = {
    "retail.orders": [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "decimal(12,2)"), ("ds", "string")],
    "retail.customers": [("customer_id", "bigint"), ("name", "string"), ("address", "struct<city:string,zip:string>")],
    "crm.contacts": [("customer_id", "bigint"), ("email", "string")],
}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 AS one",
        "select a from t;\n",
        "WITH c AS (SELECT a FROM t) SELECT a FROM c",
        "SELECT a FROM t UNION ALL SELECT b FROM u",
        "(SELECT a FROM t)",
        # Text that looks like a statement inside a string or a comment is not one.
        "SELECT ';DROP TABLE t' AS a /* ; DELETE FROM t */ -- ; INSERT INTO t SELECT 1",
    ],
)
def test_parse_select_accepts_one_query(sql: str) -> None:
    parse_select(sql)


@pytest.mark.parametrize(
    "sql, message, line, col",
    [
        ("SELECT 1 AS a;\n  SELECT 2 AS b", "a view must be one SELECT statement; found 2 statements", 2, 3),
        ("INSERT INTO t SELECT 1", "a view must be one SELECT statement (SELECT, WITH ... SELECT or a UNION of them), not INSERT", 1, 1),
        ("\n  CREATE TABLE t (a INT)", "a view must be one SELECT statement (SELECT, WITH ... SELECT or a UNION of them), not CREATE", 2, 3),
        ("DROP TABLE t", "a view must be one SELECT statement (SELECT, WITH ... SELECT or a UNION of them), not DROP", 1, 1),
        (" ;\n", "a view must be one SELECT statement; the SQL is empty", 1, 1),
        ("SELECT 1 AS a; DROP TABLE t", "a view must be one SELECT statement; found 2 statements", 1, 16),
        ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a",
         "a view must be one SELECT statement (SELECT, WITH ... SELECT or a UNION of them), not INSERT", 1, 1),
        # sqlglot accepts these inside a query; Spark would not, and a view must never write.
        ("WITH a AS (INSERT INTO t SELECT 1)\nSELECT 1 AS one", "a view must be one SELECT statement; it must not contain INSERT", 1, 12),
        ("WITH a AS (SELECT 1 AS one)\n  , b AS (DELETE FROM t) SELECT * FROM a", "a view must be one SELECT statement; it must not contain DELETE", 2, 11),
        ("WITH a AS (UPDATE t SET x = 1) SELECT 1 AS one", "a view must be one SELECT statement; it must not contain UPDATE", 1, 12),
        ("SELECT a\nINTO copy FROM t", "a view must be one SELECT statement; it must not contain SELECT ... INTO", 2, 1),
        ("MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE",
         "a view must be one SELECT statement (SELECT, WITH ... SELECT or a UNION of them), not MERGE", 1, 1),
        ("SELECT a\nFROM t\nWHERE (a", "SQL syntax error near 'a': Expecting )", 3, 8),
        ("SELECT a frm\n  tablename", "SQL syntax error near 'tablename': Invalid expression / Unexpected token", 2, 3),
    ],
)
def test_parse_select_rejects(sql: str, message: str, line: int, col: int) -> None:
    with pytest.raises(ViewSqlError) as caught:
        parse_select(sql)
    assert (caught.value.message, caught.value.line, caught.value.col) == (message, line, col)


@pytest.mark.parametrize(
    "sql, reads",
    [
        ("SELECT * FROM orders", ("retail.orders",)),
        ("SELECT * FROM Retail.ORDERS o JOIN crm.contacts c ON o.customer_id = c.customer_id", ("crm.contacts", "retail.orders")),
        # CTE names are not tables, even when a CTE shadows a table's name.
        ("WITH orders AS (SELECT * FROM retail.orders), c AS (SELECT 1 AS x) SELECT * FROM orders, c", ("retail.orders",)),
        ("SELECT a FROM t WHERE a IN (SELECT a FROM other.u) UNION SELECT a FROM t", ("other.u", "retail.t")),
        ("SELECT (SELECT MAX(a) FROM s) AS m FROM t t1 JOIN t t2 ON t1.a = t2.a", ("retail.s", "retail.t")),
        ("SELECT * FROM range(10)", ()),
    ],
)
def test_tables_read(sql: str, reads: tuple[str, ...]) -> None:
    assert tables_read(sql, "retail") == reads


O = "retail.orders"


@pytest.mark.parametrize(
    "sql, output, uses, lineage",
    [
        ("SELECT * FROM orders", ("order_id", "customer_id", "amount", "ds"),
         {O: ("amount", "customer_id", "ds", "order_id")},
         {"order_id": (f"{O}.order_id",), "customer_id": (f"{O}.customer_id",), "amount": (f"{O}.amount",),
          "ds": (f"{O}.ds",)}),
        (
            "SELECT o.*, c.email FROM orders o JOIN crm.contacts c USING (customer_id)",
            ("order_id", "customer_id", "amount", "ds", "email"),
            {"crm.contacts": ("customer_id", "email"), O: ("amount", "customer_id", "ds", "order_id")},
            {"order_id": (f"{O}.order_id",), "customer_id": (f"{O}.customer_id",), "amount": (f"{O}.amount",),
             "ds": (f"{O}.ds",), "email": ("crm.contacts.email",)},
        ),
        ("SELECT customer_id, SUM(amount) AS Revenue, ds FROM retail.orders GROUP BY 1, 3", ("customer_id", "revenue", "ds"),
         {O: ("amount", "customer_id", "ds")},
         {"customer_id": (f"{O}.customer_id",), "revenue": (f"{O}.amount",), "ds": (f"{O}.ds",)}),
        # A cast of a column and a struct field keep a name Spark agrees with; the cast's type is its own.
        ("SELECT CAST(amount AS DOUBLE), address.city FROM orders, customers", ("amount", "city"),
         {"retail.customers": ("address",), O: ("amount",)},
         {"amount": (), "city": ("retail.customers.address",)}),
        # An unnamed expression that does not reach the output is fine; its column is still used.
        ("SELECT x FROM (SELECT customer_id AS x, amount + 1 FROM orders) t", ("x",),
         {O: ("amount", "customer_id")}, {"x": (f"{O}.customer_id",)}),
        ("WITH t AS (SELECT order_id AS id FROM orders) SELECT * FROM t", ("id",),
         {O: ("order_id",)}, {"id": (f"{O}.order_id",)}),
        # A union is named by its first branch; each output column comes from both branches.
        ("SELECT order_id AS id FROM orders UNION ALL SELECT customer_id FROM customers", ("id",),
         {"retail.customers": ("customer_id",), O: ("order_id",)},
         {"id": ("retail.customers.customer_id", f"{O}.order_id")}),
    ],
)
def test_analyze_view(sql: str, output: tuple[str, ...], uses: dict, lineage: dict) -> None:
    analysis = analyze_view(sql, "retail", SCHEMA)
    assert analysis == ViewAnalysis(output=output, reads=tuple(sorted(uses)), uses=uses, lineage=lineage)
    assert list(analysis.lineage) == list(output)


def test_columns_used_only_outside_the_output_count_too():
    sql = """
        SELECT o.customer_id, ROW_NUMBER() OVER (PARTITION BY o.ds ORDER BY o.amount) AS rn
        FROM orders o JOIN customers c ON o.customer_id = c.customer_id
        WHERE c.name <> '' AND EXISTS (SELECT 1 FROM crm.contacts k WHERE k.customer_id = o.customer_id)
        GROUP BY o.customer_id, o.ds, o.amount HAVING COUNT(o.order_id) > 1
    """
    analysis = analyze_view(sql, "retail", SCHEMA)
    assert analysis.uses == {"crm.contacts": ("customer_id",), "retail.customers": ("customer_id", "name"),
                             O: ("amount", "customer_id", "ds", "order_id")}
    # A rank's type is its own: what the window partitions and orders by does not reach it.
    assert analysis.lineage == {"customer_id": (f"{O}.customer_id",), "rn": ()}


UNNAMED = "has no name: add an alias (Spark permanent views need one)"
NO_SOURCE_HAS_IT = "no table or subquery this query reads has it"
ORDERS = "(columns of retail.orders: order_id, customer_id, amount, ds)"


@pytest.mark.parametrize(
    "sql, message, line, col",
    [
        ("SELECT a\nFROM retail.missing", "unknown table or view 'retail.missing'", 2, 6),
        ("SELECT * FROM orders JOIN\n  Missing m ON 1 = 1", "unknown table or view 'retail.missing'", 2, 3),
        ("SELECT order_id,\n       nope\nFROM orders", f"unknown column 'nope': {NO_SOURCE_HAS_IT} {ORDERS}", 2, 8),
        ("SELECT o.nope FROM orders o", "retail.orders as o has no column 'nope' (its columns: order_id, customer_id, "
                                        "amount, ds)", 1, 8),
        ("SELECT o.amout FROM orders o", "retail.orders as o has no column 'amout'; did you mean 'amount'?", 1, 8),
        ("SELECT order_id FROM orders WHERE `Nope` > 1", f"unknown column 'nope': {NO_SOURCE_HAS_IT} {ORDERS}", 1, 35),
        ("SELECT z.order_id FROM orders", "unknown table or alias 'z' (this query reads: orders)", 1, 8),
        ("SELECT z.* FROM orders", "unknown table or alias 'z'", 1, 8),
        (
            "SELECT customer_id FROM orders o JOIN customers c ON o.customer_id = c.customer_id",
            "ambiguous column 'customer_id': retail.orders as o and retail.customers as c both have it; qualify it "
            "with the alias of the one you mean",
            1, 8,
        ),
        ("SELECT o.name FROM orders o JOIN customers c ON o.customer_id = c.customer_id",
         "retail.orders as o has no column 'name' (its columns: order_id, customer_id, amount, ds)", 1, 8),
        ("WITH w AS (SELECT amount FROM orders) SELECT w.order_id FROM w",
         "the CTE w has no column 'order_id' (its columns: amount)", 1, 46),
        ("SELECT customer_id, SUM(amount)\nFROM orders GROUP BY customer_id", f"output column SUM(amount) {UNNAMED}", 1, 21),
        ("SELECT * FROM (SELECT order_id, amount * 2 FROM orders) t", f"output column amount * 2 {UNNAMED}", 1, 33),
        ("SELECT COUNT(*) FROM orders", f"output column COUNT(*) {UNNAMED}", 1, 8),
        ("SELECT order_id, customer_id AS Order_ID FROM orders", "duplicate output column 'order_id': give each output column its own name", 1, 18),
        ("SELECT 1; SELECT 2", "a view must be one SELECT statement; found 2 statements", 1, 11),
    ],
)
def test_analyze_view_errors(sql: str, message: str, line: int, col: int) -> None:
    with pytest.raises(ViewSqlError) as caught:
        analyze_view(sql, "retail", SCHEMA)
    assert (caught.value.message, caught.value.line, caught.value.col) == (message, line, col)


@pytest.mark.parametrize("expression, typed_by", [
    ("COUNT(amount)", ()), ("COUNT(DISTINCT customer_id)", ()), ("amount > 0", ()), ("amount IS NULL", ()),
    ("CASE WHEN amount > 0 THEN 'yes' ELSE 'no' END", ()), ("CASE WHEN ds = '' THEN amount END", ("amount",)),
    ("SUM(amount)", ("amount",)), ("MAX(amount) OVER (PARTITION BY ds)", ("amount",)),
    ("COALESCE(amount, order_id)", ("amount", "order_id")), ("amount * 2", ("amount",)),
])
def test_lineage_follows_only_what_the_output_type_depends_on(expression: str, typed_by: tuple[str, ...]) -> None:
    analysis = analyze_view(f"SELECT {expression} AS x FROM orders", "retail", SCHEMA)
    assert analysis.lineage == {"x": tuple(f"{O}.{c}" for c in typed_by)}


def test_what_an_exists_subquery_selects_is_not_used_only_its_conditions():
    # SELECT * inside EXISTS counted every column of the table: strict mode then blocked harmless changes.
    sql = """
        SELECT o.order_id FROM orders o
        WHERE EXISTS (SELECT * FROM customers c WHERE c.customer_id = o.customer_id)
          AND NOT EXISTS (SELECT k.customer_id, k.email FROM crm.contacts k WHERE k.customer_id = o.customer_id)
          AND o.customer_id IN (SELECT c2.customer_id FROM customers c2 WHERE c2.name <> '')
    """
    analysis = analyze_view(sql, "retail", SCHEMA)
    assert analysis.uses == {"crm.contacts": ("customer_id",), "retail.customers": ("customer_id", "name"),
                             O: ("customer_id", "order_id")}


def test_normalize_sql_ignores_layout_case_and_semicolon() -> None:
    declared = "select customer_id,\n       sum(amount) as revenue\n  from retail.orders\n group by customer_id;\n"
    live = "SELECT customer_id, SUM(amount) AS revenue FROM retail.orders GROUP BY customer_id"
    assert normalize_sql(declared) == normalize_sql(live) == live
    assert normalize_sql("SELECT a FROM t WHERE b = 'X'") != normalize_sql("SELECT a FROM t WHERE b = 'x'")


def test_normalize_sql_falls_back_to_whitespace_for_unparseable_text() -> None:
    assert normalize_sql("SELECT `a\n  FROM t ;") == "SELECT `a FROM t"


def test_tables_renamed_keep_their_alias_and_leave_ctes_and_other_tables_alone():
    from schemaflow.sql.views import with_tables_renamed

    sql = ("WITH c AS (SELECT * FROM t) SELECT c.a, o.b, t.a FROM c JOIN retail.orders o ON c.a = o.a "
           "JOIN other.x ON TRUE JOIN t ON TRUE")
    assert with_tables_renamed(sql, "shop", {"shop.t": "s1", "retail.orders": "s2", "shop.c": "never"}) == (
        "WITH c AS (SELECT * FROM `s1` AS t) SELECT c.a, o.b, t.a FROM c JOIN `s2` AS o ON c.a = o.a "
        "JOIN other.x ON TRUE JOIN `s1` AS t ON TRUE")
    assert with_tables_renamed("SELECT myUdf(a) AS x FROM t", "shop", {"shop.t": "s1"}) == \
        "SELECT myUdf(a) AS x FROM `s1` AS t"  # function names as written, for Spark's messages
    # A column qualified with its database cannot follow a renamed table.
    assert with_tables_renamed("SELECT shop.t.a FROM shop.t", "shop", {"shop.t": "s1"}) is None


C = "crm.contacts"


@pytest.mark.parametrize(
    "sql, output, lineage, star",
    [
        # * selects the matched column first, made of both copies; then each source's other columns.
        ("SELECT * FROM orders o JOIN crm.contacts c USING (customer_id)",
         ("customer_id", "order_id", "amount", "ds", "email"),
         {"customer_id": (C + ".customer_id", f"{O}.customer_id"), "email": (C + ".email",)},
         "COALESCE(`o`.`customer_id`, `c`.`customer_id`) AS `customer_id`, `o`.`order_id`, `o`.`amount`, `o`.`ds`, "
         "`c`.`email`"),
        ("SELECT * FROM orders o NATURAL JOIN crm.contacts c",
         ("customer_id", "order_id", "amount", "ds", "email"),
         {"customer_id": (C + ".customer_id", f"{O}.customer_id"), "email": (C + ".email",)},
         "COALESCE(`o`.`customer_id`, `c`.`customer_id`) AS `customer_id`, `o`.`order_id`, `o`.`amount`, `o`.`ds`, "
         "`c`.`email`"),
        # t.* is t's own columns, its copy of the matched one included.
        ("SELECT c.* FROM orders o JOIN crm.contacts c USING (customer_id)", ("customer_id", "email"),
         {"customer_id": (C + ".customer_id",), "email": (C + ".email",)}, "`c`.`customer_id`, `c`.`email`"),
        # A derived table's columns, its own * expanded first.
        ("SELECT x.* FROM (SELECT * FROM crm.contacts) x JOIN orders o USING (customer_id)", ("customer_id", "email"),
         {"customer_id": (C + ".customer_id",), "email": (C + ".email",)}, "`x`.`customer_id`, `x`.`email`"),
        # Each join's matched columns go before those of the joins before it.
        ("SELECT * FROM orders o JOIN crm.contacts c USING (customer_id) JOIN (SELECT email, 1 AS one FROM crm.contacts) e "
         "USING (email)", ("email", "customer_id", "order_id", "amount", "ds", "one"),
         {"email": (C + ".email",), "customer_id": (C + ".customer_id", f"{O}.customer_id")},
         "COALESCE(`c`.`email`, `e`.`email`) AS `email`, COALESCE(`o`.`customer_id`, `c`.`customer_id`) AS `customer_id`, "
         "`o`.`order_id`, `o`.`amount`, `o`.`ds`, `e`.`one`"),
    ],
)
def test_a_star_over_a_using_or_natural_join_selects_what_spark_selects(
        sql: str, output: tuple[str, ...], lineage: dict, star: str) -> None:
    """The same on every sqlglot release schemaflow allows (sqlglot/joined_stars.py says how they differ)."""
    analysis = analyze_view(sql, "retail", SCHEMA)
    assert analysis.output == output
    assert {column: analysis.lineage[column] for column in lineage} == lineage
    assert [text for _, _, text in analysis.stars] == [star]


def test_a_star_over_a_using_join_that_selects_a_name_twice_is_refused() -> None:
    sql = "SELECT * FROM orders o JOIN crm.contacts c USING (customer_id) JOIN customers k ON k.customer_id = o.order_id"
    with pytest.raises(ViewSqlError, match="duplicate output column 'customer_id'"):
        analyze_view(sql, "retail", SCHEMA)


def test_a_star_over_a_subquery_without_an_alias_is_stored_with_names_that_subquery_has() -> None:
    from schemaflow.sql.views import hive_readable

    schema = {"retail.orders": [("id", "bigint"), ("amount", "decimal(10,2)")]}
    sql = "SELECT * FROM (SELECT id, amount FROM retail.orders)"  # Spark takes it with no alias
    analysis = analyze_view(sql, "retail", schema)
    assert analysis.output == ("id", "amount")
    # sqlglot knows the subquery by a name it made up (_0): the stored text may not use it.
    assert hive_readable(sql, "retail", analysis.stars) == "SELECT `id`, `amount` FROM (SELECT id, amount FROM retail.orders)"
    aliased = "SELECT * FROM (SELECT id, amount FROM retail.orders) s"
    assert hive_readable(aliased, "retail", analyze_view(aliased, "retail", schema).stars) == (
        "SELECT `s`.`id`, `s`.`amount` FROM (SELECT id, amount FROM retail.orders) s")


def test_a_star_over_a_structs_fields_names_them_and_is_stored_with_them() -> None:
    from schemaflow.sql.views import hive_readable

    schema = {"retail.orders": [("id", "bigint"), ("st", "struct<a:int,`b c`:string>")]}
    sql = "SELECT id, o.st.* FROM retail.orders o"
    analysis = analyze_view(sql, "retail", schema)
    assert analysis.output == ("id", "a", "b c")  # as Spark names a struct's fields
    assert analysis.uses == {"retail.orders": ("id", "st")}
    assert hive_readable(sql, "retail", analysis.stars) == "SELECT id, `o`.`st`.`a`, `o`.`st`.`b c` FROM retail.orders o"


def test_a_star_over_a_column_not_known_to_be_a_struct_is_refused_where_it_is_written() -> None:
    schema = {"retail.v": [("st", "string")]}  # a view's column: its type is not known here
    with pytest.raises(ViewSqlError) as refused:
        analyze_view("SELECT id,\n  st.* FROM retail.v", "retail", schema | {"retail.v": [("id", "int"), ("st", "string")]})
    assert (refused.value.line, refused.value.col) == (2, 3)
    assert "st.* selects the fields of a column schemaflow does not know to be a struct here" in str(refused.value)


@pytest.mark.parametrize("sql, used", [
    ("SELECT id FROM (SELECT * FROM retail.orders) x", ("id",)),
    ("SELECT x.id FROM (SELECT * FROM retail.orders WHERE amount > 0) x", ("amount", "id")),
    ("WITH c AS (SELECT * FROM retail.orders) SELECT id FROM c", ("id",)),
    ("SELECT id FROM (SELECT * FROM (SELECT * FROM retail.orders) y) x", ("id",)),
    # The outermost star is frozen into the stored text: every column it selects is used.
    ("SELECT * FROM (SELECT * FROM retail.orders) x", ("amount", "extra", "id")),
    # What reads a UNION reads its branches alike: each branch's star is kept whole.
    ("SELECT id FROM (SELECT * FROM retail.orders UNION ALL SELECT * FROM retail.orders) x", ("amount", "extra", "id")),
    ("SELECT id FROM (SELECT id, extra FROM retail.orders) x", ("extra", "id")),  # named: it breaks if extra goes
])
def test_a_column_an_inner_star_selects_is_used_only_if_something_outside_reads_it(sql: str, used: tuple[str, ...]) -> None:
    schema = {"retail.orders": [("id", "bigint"), ("amount", "double"), ("extra", "string")]}
    assert analyze_view(sql, "retail", schema).uses == {"retail.orders": used}
