"""DDL text: quoting of names and escaping of strings, the statements each change produces."""
from __future__ import annotations

from dataclasses import replace

from schemaflow.model import Column, Table, View
from schemaflow.sql import ddl


def test_identifiers_are_backquoted_with_backquotes_doubled():
    assert ddl.ident("odd`name") == "`odd``name`"


def test_strings_use_backslash_escapes_spark_accepts():
    assert ddl.string("it's `x`; \\ \n") == "'it\\'s `x`; \\\\ \\n'"


def test_create_table_with_everything():
    table = Table("retail", "orders", (Column("order_id", "bigint", "Id 'quoted'"), Column("amount", "decimal(12,2)")),
                  (Column("ds", "string", "Load date"),), comment="Lines", format="orc", external=True,
                  location="/data/orders")
    assert ddl.create_table(table) == (
        "CREATE EXTERNAL TABLE `retail`.`orders` (\n"
        "  `order_id` bigint COMMENT 'Id \\'quoted\\'',\n"
        "  `amount` decimal(12,2)\n"
        ")\n"
        "COMMENT 'Lines'\n"
        "PARTITIONED BY (\n  `ds` string COMMENT 'Load date'\n)\n"
        "STORED AS ORC\n"
        "LOCATION '/data/orders'\n"
        "TBLPROPERTIES ('schemaflow.version' = ${claim})")  # born claimed: the executor fills in the claim


def test_create_view_imposes_names_and_comments():
    view = View("retail", "v", "SELECT a, b FROM retail.t", (Column("x", comment="X;"), Column("b")), comment="V")
    assert ddl.create_view(view, replace=True) == (
        "CREATE OR REPLACE VIEW `retail`.`v` (\n  `x` COMMENT 'X;',\n  `b`\n)\nCOMMENT 'V'\n"
        "TBLPROPERTIES ('schemaflow.version' = ${claim})\nAS SELECT a, b FROM retail.t")


def test_table_comment_can_be_removed():
    assert ddl.set_table_comment("retail.t", None) == "COMMENT ON TABLE `retail`.`t` IS NULL"


PLACEHOLDERS = "${claim} ${applied_at} ${live_state} ${env:HOME} ${x} TBLPROPERTIES ('schemaflow.version' = ${claim})"


def test_the_claim_fills_only_schemaflows_own_clause_never_user_text():
    view = View("shop", "v", f"SELECT '{PLACEHOLDERS}' AS a -- {PLACEHOLDERS}",
                columns=(Column("a", comment=PLACEHOLDERS),), comment=PLACEHOLDERS)
    table = Table("shop", "t", (Column("a", "int", PLACEHOLDERS),), comment=PLACEHOLDERS,
                  external=True, location=f"/data/{PLACEHOLDERS}")
    for sql in (ddl.create_view(view, replace=False), ddl.create_table(table)):
        filled = ddl.fill_claim(sql, "claim:{\"run\":\"r1\"}")
        # Exactly one clause changed: the one ddl wrote; every user copy of the text is as written.
        assert filled.count("${claim}") == sql.count("${claim}") - 1
        assert "TBLPROPERTIES ('schemaflow.version' = 'claim:{\"run\":\"r1\"}')" in filled
        assert filled.replace("'claim:{\"run\":\"r1\"}'", "${claim}", 1) == sql


def test_applied_at_fills_schemaflows_parameters_only():
    from schemaflow.plan.steps import APPLIED_AT, fill_applied_at

    filled = fill_applied_at({"schemaflow.applied_at": APPLIED_AT, "schemaflow.migration.0002": f'{{"at": "{APPLIED_AT}"}}',
                              "owner": APPLIED_AT, "note": f"set at {APPLIED_AT}"}, "2026-11-23T00:00:00Z")
    assert filled == {"schemaflow.applied_at": "2026-11-23T00:00:00Z",
                      "schemaflow.migration.0002": '{"at": "2026-11-23T00:00:00Z"}',
                      "owner": APPLIED_AT, "note": f"set at {APPLIED_AT}"}


def test_a_view_is_stored_with_every_table_it_reads_named_with_its_database():
    from schemaflow.sql.views import hive_readable

    sql = ("WITH recent AS (SELECT * FROM orders WHERE ds > '2026')  -- orders: the shop's\n"
           "SELECT r.id, `items`.sku FROM recent r JOIN `items` ON TRUE JOIN other.x USING (k)\n"
           "WHERE EXISTS (SELECT 1 FROM shop.refunds)")
    assert hive_readable(sql, "shop") == (
        "WITH recent AS (SELECT * FROM `shop`.orders WHERE ds > '2026')  -- orders: the shop's\n"
        "SELECT r.id, `items`.sku FROM recent r JOIN `shop`.`items` ON TRUE JOIN other.x USING (k)\n"
        "WHERE EXISTS (SELECT 1 FROM shop.refunds)")


def test_a_view_is_stored_with_hive_reserved_words_back_quoted_as_hive_parses_it():
    from schemaflow.sql.views import hive_readable

    sql = "SELECT id, date, `user`, t.timestamp AS at FROM user u JOIN t ON u.date = t.date -- date"
    assert hive_readable(sql, "shop") == (
        "SELECT id, `date`, `user`, t.`timestamp` AS at FROM `shop`.`user` u JOIN `shop`.t ON u.`date` = t.`date` -- date")


def test_a_view_whose_columns_rename_its_output_is_stored_wrapped_in_a_select_that_renames_it():
    renamed = View("shop", "v", "SELECT id, amount FROM orders", (Column("order_id", comment="The id"), Column("amount")),
                   output=("id", "amount"))
    assert ddl.view_text(renamed) == ("SELECT `id` AS `order_id`, `amount`\nFROM (\n"
                                      "SELECT id, amount FROM `shop`.orders\n) `v`")
    same = replace(renamed, columns=(Column("id", comment="The id"), Column("amount")))
    assert ddl.view_text(same) == "SELECT id, amount FROM `shop`.orders"
    assert ddl.create_view(renamed, replace=True).endswith("AS SELECT `id` AS `order_id`, `amount`\nFROM (\n"
                                                           "SELECT id, amount FROM `shop`.orders\n) `v`")


def test_a_star_view_is_stored_with_the_columns_of_each_star_and_compared_but_for_them():
    from schemaflow.sql.views import analyze_view

    schema = {"shop.t": [("id", "int"), ("date", "string")]}
    sql = "SELECT * FROM t WHERE id > 0 UNION ALL SELECT t.* FROM t"
    analysis = analyze_view(sql, "shop", schema)
    view = View("shop", "v", sql, tuple(Column(name) for name in analysis.output), output=analysis.output,
                stars=analysis.stars)
    stored = ddl.view_text(view)
    assert stored == ("SELECT `t`.`id`, `t`.`date` FROM `shop`.t WHERE id > 0 "
                      "UNION ALL SELECT `t`.`id`, `t`.`date` FROM `shop`.t")
    assert ddl.stores_view(stored, view)
    # Stored when the table had other columns, or before stars were expanded: the same declared SQL.
    assert ddl.stores_view(stored.replace(", `t`.`date`", ""), view)
    assert ddl.stores_view("SELECT * FROM `shop`.t WHERE id > 0 UNION ALL SELECT t.* FROM `shop`.t", view)
    assert not ddl.stores_view(stored.replace("id > 0", "id > 1"), view)
    assert not ddl.stores_view(stored + " ", view)
