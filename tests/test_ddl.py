"""DDL text: quoting of names and escaping of strings, the statements each change produces."""
from __future__ import annotations

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
