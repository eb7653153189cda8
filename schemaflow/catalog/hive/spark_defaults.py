"""The settings a site's Spark installation gives every application it starts: its ``spark-defaults.conf``.

A team on a shared cluster sets the Hive client Spark talks to its metastore with there, once, for every job
(``spark.sql.hive.metastore.version`` and jars: a Hive 4 metastore needs Hive 4's client). Spark reads the file from
``SPARK_CONF_DIR``, else the installation's ``conf/`` (``catalog.hive.spark_home``). schemaflow reads it itself and hands
its entries to the JVM beneath the application's own, in the properties file Spark starts from
(``catalog.hive.spark_launch``: given one, Spark reads no ``spark-defaults.conf``); decisions schemaflow takes before the
JVM starts (whether Spark's built-in client will be the one, whether a Hive client's classes must see py4j's) read
the same entries, so that they agree with the JVM. The file is in Java's properties format, which Spark reads with
``java.util.Properties`` and then trims each value; ``format_properties`` writes that format.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from schemaflow.catalog.hive.spark_home import conf_dir

FILE_NAME = "spark-defaults.conf"
# A key ends at its first unescaped '=', ':' or white space; the separator may be padded with white space.
_ENTRY = re.compile(r"((?:\\.|[^=:\s\\])*)\s*[=:]?\s*(.*)", re.DOTALL)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
# What Spark trims off a value (``Utils.trimExceptCRLF``, as Java's ``String.trim`` but for line breaks).
_TRIMMED = "".join(chr(code) for code in range(0x21) if chr(code) not in "\r\n")
# What ``format_properties`` writes as it is: nothing the format gives a meaning (white space, '=', ':', '#', '!',
# '\\'), nothing outside ASCII.
_PLAIN = re.compile(r"[\w.,;/@%+*?()<>|~^$&-]", re.ASCII)


def defaults_file(env: Mapping[str, str] | None = None) -> Path | None:
    """The ``spark-defaults.conf`` of the Spark installation in ``env`` (default: this process's environment)."""
    folder = conf_dir(env)
    return folder / FILE_NAME if folder is not None else None


def spark_defaults(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The entries of the installation's ``spark-defaults.conf`` (none where there is no such file)."""
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
        entries[_unescape(key)] = _unescape(value).strip(_TRIMMED)
    return entries


def format_properties(entries: Mapping[str, str]) -> str:
    """``entries`` in Java's properties format, one a line, each read back as it is (but for the trim Spark gives a
    value): every character but letters, digits and a few marks is written as its ``\\uXXXX`` escape."""
    return "".join(f"{_escape(key)}={_escape(value)}\n" for key, value in entries.items())


def _escape(text: str) -> str:
    return "".join(character if _PLAIN.fullmatch(character) else _unicode_escape(character) for character in text)


def _unicode_escape(character: str) -> str:
    """``\\uXXXX`` for each UTF-16 unit of ``character`` (two for one beyond the Basic Multilingual Plane)."""
    units = character.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))


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
    # Java's strings are UTF-16: two escapes of a surrogate pair are one character beyond the Basic Multilingual Plane.
    return _ESCAPE.sub(one, text).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
