"""How a name and a string are written in Spark SQL: the one place either is quoted.

Identifiers are back-quoted, a back-quote inside doubled, which Spark's and Hive's parsers both
read back as the name. String literals use Spark's default backslash escapes, the only form Spark's
parser accepts (it rejects SQL's doubled quote ``''``), so a text holding quotes, back-quotes,
semicolons or newlines round-trips unchanged. Every statement schemaflow runs quotes through these:
as text, or as the nodes of a statement built as a sqlglot tree, whose Spark generator writes a
quoted name exactly as ``ident`` does.
"""
from __future__ import annotations

from sqlglot import exp

from schemaflow.model import split_key


def ident(name: str) -> str:
    """A name back-quoted for Spark and Hive SQL, a back-quote in it doubled."""
    return "`" + name.replace("`", "``") + "`"


def qualified(key: str) -> str:
    """``db.name`` as two quoted names."""
    database, name = split_key(key)
    return f"{ident(database)}.{ident(name)}"


def string(text: str) -> str:
    """A string literal: backslash, quote and line breaks escaped, every other character as it is."""
    escaped = (text.replace("\\", "\\\\").replace("'", "\\'")
               .replace("\n", "\\n").replace("\r", "\\r"))
    return f"'{escaped}'"


def identifier_node(name: str) -> exp.Identifier:
    """A name as a sqlglot node, written as ``ident`` writes it."""
    return exp.to_identifier(name, quoted=True)


def table_node(key: str) -> exp.Table:
    """``db.name`` as a sqlglot node, written as ``qualified`` writes it."""
    database, name = split_key(key)
    return exp.Table(this=identifier_node(name), db=identifier_node(database))


def string_node(text: str) -> exp.Literal:
    """A string literal as a sqlglot node, written as ``string`` writes it.

    Held as written, since sqlglot's Spark generator would also escape tab, NUL, backspace, form
    feed, vertical tab and Ctrl-Z (measured, sqlglot 30.30), which schemaflow has always written as
    they are (Spark reads either alike): plans stay as they were.
    """
    return exp.Literal(this=string(text), is_string=False)
