"""schemaflow's Spark dialect: Spark's grammar where sqlglot releases differ, and nothing else changed."""
from __future__ import annotations

from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.views import analyze_view, normalize_sql


def test_the_tokenizer_differs_from_sparks_only_in_that_out_is_a_name() -> None:
    ours, sparks = DIALECT.tokenizer_class.KEYWORDS, Spark.Tokenizer.KEYWORDS
    assert {word: kind for word, kind in sparks.items() if ours.get(word) != kind} == {"OUT": TokenType.OUT}
    assert ours.keys() <= sparks.keys()


def test_out_is_a_table_a_column_and_an_alias_as_in_spark() -> None:
    sql = "SELECT out.out AS out FROM out JOIN other.out o ON o.out = out.out"
    analysis = analyze_view(sql, "retail", {"retail.out": [("out", "int")], "other.out": [("out", "int")]})
    assert (analysis.output, analysis.reads) == (("out",), ("other.out", "retail.out"))
    assert normalize_sql(sql) == sql.replace(" o ON", " AS o ON")
