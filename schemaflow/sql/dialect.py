"""Spark SQL as schemaflow reads and writes it: sqlglot's Spark dialect, the same on every supported release.

schemaflow parses view SQL and writes statements through this one dialect (``DIALECT``), so that
every sqlglot release it allows (30.8 to 30.30: see pyproject.toml) reads what Spark reads:

- ``out`` is a name, as in Spark's grammar: sqlglot's tokenizer makes it a keyword (a parameter
  mode, ``OUT``), which parsers before 30.14 refuse as a table or column name.
- A data-source table's ``OPTIONS ('k' = 'v', ...)`` parses (as ``TBLPROPERTIES`` does) in
  releases without sqlglot's own parser of it (``exp.OptionsProperty``, from 30.30); there a
  ``CREATE TABLE ... USING csv OPTIONS (...)`` would otherwise fall back to a bare command.
  schemaflow writes no statement from such a tree: only its tests read back the CREATE it builds.

Where sqlglot's analysis differs between releases rather than its grammar, the module that
analyses says so (``sql/joined_stars.py``).
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.parsers.spark import SparkParser


class SchemaflowSpark(Spark):
    class Tokenizer(Spark.Tokenizer):
        KEYWORDS = {word: kind for word, kind in Spark.Tokenizer.KEYWORDS.items() if word != "OUT"}

    class Parser(SparkParser):
        if not hasattr(exp, "OptionsProperty"):  # sqlglot 30.8 to 30.29
            PROPERTY_PARSERS = {**SparkParser.PROPERTY_PARSERS, "OPTIONS": SparkParser.PROPERTY_PARSERS["TBLPROPERTIES"]}


DIALECT = SchemaflowSpark()
