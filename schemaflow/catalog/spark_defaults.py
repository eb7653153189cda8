"""The settings a site's Spark installation gives every application it starts: its ``spark-defaults.conf``.

A team on a shared cluster sets the Hive client Spark talks to its metastore with there, once, for every job
(``spark.sql.hive.metastore.version`` and jars: a Hive 4 metastore needs Hive 4's client). Spark's launcher reads
the file from ``SPARK_CONF_DIR``, else ``$SPARK_HOME/conf`` (pyspark's own folder when ``SPARK_HOME`` is unset),
and gives its entries to the JVM beneath the application's own. Decisions schemaflow takes before the JVM starts
(whether Spark's built-in client will be the one, whether a Hive client's classes must see py4j's) read the same
file, so that they agree with the JVM. The file is in Java's properties format, which Spark reads with
``java.util.Properties`` and then trims each value.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path

FILE_NAME = "spark-defaults.conf"
# A key ends at its first unescaped '=', ':' or white space; the separator may be padded with white space.
_ENTRY = re.compile(r"((?:\\.|[^=:\s\\])*)\s*[=:]?\s*(.*)", re.DOTALL)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def defaults_file(env: Mapping[str, str] | None = None) -> Path | None:
    """The ``spark-defaults.conf`` Spark's launcher reads in ``env`` (default: this process's environment)."""
    env = os.environ if env is None else env
    if env.get("SPARK_CONF_DIR"):
        return Path(env["SPARK_CONF_DIR"]) / FILE_NAME
    if env.get("SPARK_HOME"):
        return Path(env["SPARK_HOME"]) / "conf" / FILE_NAME
    spec = find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "conf" / FILE_NAME


def spark_defaults(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The entries of the ``spark-defaults.conf`` Spark would read (none where there is no such file)."""
    path = defaults_file(env)
    if path is None or not path.is_file():
        return {}
    return parse_properties(path.read_text(encoding="utf-8", errors="replace"))


def parse_properties(text: str) -> dict[str, str]:
    """``text`` in Java's properties format (comments, continued lines, escapes), each value trimmed as Spark does."""
    entries: dict[str, str] = {}
    for line in _logical_lines(text):
        match = _ENTRY.fullmatch(line)
        assert match is not None  # every line matches: both groups may be empty
        key, value = match.groups()
        entries[_unescape(key)] = _unescape(value).strip()
    return entries


def _logical_lines(text: str) -> list[str]:
    """The entries of ``text``: comment and blank lines left out, a line ending in an odd number of backslashes
    joined with the next (whose leading white space is dropped)."""
    lines: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line.startswith(("#", "!"))):
            continue
        continued = (len(line) - len(line.rstrip("\\"))) % 2 == 1
        line = line[:-1] if continued else line
        pending = line if pending is None else pending + line
        if not continued:
            lines.append(pending)
            pending = None
    if pending is not None:
        lines.append(pending)
    return lines


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped.startswith("u") and len(escaped) == 5:
            return chr(int(escaped[1:], 16))
        return _ESCAPES.get(escaped, escaped)
    return _ESCAPE.sub(one, text)
