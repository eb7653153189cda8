"""``schemaflow fmt``: every YAML file of a project rewritten into one canonical layout.

Two people who write the same table should commit the same text, so that reviews show what
changed and not how it was typed. The canonical form of a file depends on its kind (a table, view
or source under ``schemas/``, a migration, the settings file), whose JSON Schema lists its keys:

- keys in the order of the schema's ``properties``, at every level the schema describes; keys it
  does not know follow, as written. Free-form mappings of names to scalars (``properties``,
  ``options``, ``serde_properties``, ``spark.conf``) are sorted by name;
- 2-space indentation, list items indented under their key; each column (``columns``,
  ``partitioned_by``) and each free-form mapping on one line in flow style (``{name: id, type:
  bigint}``) when that line fits in ``LINE_WIDTH`` characters, else in block style, as is one that
  holds a comment or a plain scalar flow style would have to quote (``decimal(12,2)``); any other
  list or mapping in the style it is written in, unless it holds a comment;
- every scalar as written: the same text in the same quotes, a literal block staying one (indented
  with its key); only a plain or quoted text written over several lines is joined onto one;
- every comment kept, with what it belongs to: an end-of-line comment with its entry, the lines
  above an entry with that entry, lines indented under the end of a list or mapping with it; the
  comment block heading the file stays at the top.

A file is read as ``validate`` reads it (``yamlpos``: its errors are located there), then by
PyYAML's parser, whose marks tell where each entry and comment lies (ruamel attaches a comment to
whatever precedes it, which is not what a comment is about), and whose events give the values in
ruamel.yaml's types that keep each scalar's quoting (a file with a tag or a folded scalar is loaded
by ruamel.yaml itself: only its load keeps where a folded scalar's lines break). Comments are set
aside, the values are written by ruamel.yaml without them in the canonical order, and the comments
are woven back in at the lines where their entries now are. The result must hold the same data (as
PyYAML's safe loader reads it) and the same comments as the file; otherwise it is an error, and the
file is left as it is. A project of many files is formatted by a process per core.
"""
from __future__ import annotations

import difflib
import io
import os
import re
import sys
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any
from collections.abc import Callable, Iterator, Mapping, Sequence

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarstring import (DoubleQuotedScalarString, FoldedScalarString, LiteralScalarString,
                                     SingleQuotedScalarString)

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Source
from schemaflow.output_safety import one_line
from schemaflow.spec.declaration import DeclarationKind
from schemaflow.spec.loader import SCHEMAS_DIR, SUFFIXES
from schemaflow.spec.migrations import MIGRATIONS_DIR
from schemaflow.spec.schema import inlined_schema
from schemaflow.spec.settings import SETTINGS_FILE
from schemaflow.spec.shape_check import compile_schema
from schemaflow.spec.source import Directory, ReadFile
from schemaflow.spec.yamlpos import NodePath, load_yaml, read_bytes
from schemaflow.workers import pool

LINE_WIDTH = 120  # the longest line a column or free-form mapping may take on one line
# Whose items are written one a line: columns (a Hive table's partition columns too). An Iceberg table's
# partition fields and sort terms (text) stay as written: on one line, as Spark writes them, YAML's flow
# list splits bucket(16, id) at its comma, and the halves written one a line would read as two items.
_COLUMN_LISTS = ("columns", "partitioned_by")
# Where YAML breaks lines (PyYAML counts lines at these), and a block scalar's indicator.
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_BLOCK_HEADER = re.compile(r"[|>][0-9+-]*")


@dataclass(frozen=True)
class Formatted:
    """One file's text and its canonical form."""

    path: str  # relative to the project root, posix
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def format_text(path: str, text: str) -> str:
    """The canonical form of one file's text; ``path`` (project-relative) tells its kind. Raises SpecError
    (located, path:line:col) for text that is not YAML, or when formatting would change its data or comments."""
    return _format(path, text.encode("utf-8", "surrogatepass"))


def format_project(root: Path, progress: Callable[[str], None] = lambda message: None,
                   ) -> tuple[list[Formatted], list[Problem]]:
    """Every YAML file of the project at ``root``, sorted by path, each with its canonical form; the problems
    of files that could not be formatted (they are left out). Writes nothing; says to ``progress`` when
    many files are shared among processes (seconds of work)."""
    files = Directory(root)
    problems: list[Problem] = []
    paths: list[str] = []
    for folder in (SCHEMAS_DIR, MIGRATIONS_DIR):
        found, unreadable = files.files_under(folder)
        problems.extend(unreadable)
        paths.extend(path for path in found if _kind_of_path(path) is not None)
    try:
        if files.open(SETTINGS_FILE) is not None:
            paths.append(SETTINGS_FILE)
    except SpecError as error:
        problems.extend(error.problems)
    formatted = []
    for result in _each_formatted(root, sorted(paths), progress):
        if isinstance(result, Formatted):
            formatted.append(result)
        else:
            problems.extend(result)
    return formatted, problems


# A project's files are formatted by a process for each this many of them, up to one per core, as
# black formats many files: each takes about 4 ms of Python (most of it ruamel.yaml's dump), and a
# process takes tens of milliseconds to start.
FILES_PER_PROCESS = 100


def _each_formatted(root: Path, paths: list[str], progress: Callable[[str], None]) -> list[Formatted | list[Problem]]:
    """Each file formatted, or its problems, in the order of ``paths``."""
    workers = min(os.cpu_count() or 1, len(paths) // FILES_PER_PROCESS)
    if workers >= 2:
        try:
            with pool(workers, __name__) as shared:
                progress(f"Formatting {len(paths)} files in {workers} processes ...")
                chunk = max(1, len(paths) // (workers * 8))
                return list(shared.map(partial(_formatted, root), paths, chunksize=chunk))
        except (OSError, NotImplementedError):  # no processes to be had here (no /dev/shm, say)
            pass
    return [_formatted(root, path) for path in paths]


def _formatted(root: Path, path: str) -> Formatted | list[Problem]:
    try:
        content = read_bytes(root / path, path)
        after = _format(path, content)  # first: it reports a file that is not UTF-8
        return Formatted(path, content.decode("utf-8"), after)
    except SpecError as error:
        return error.problems


def write_formatted(root: Path, formatted: Sequence[Formatted]) -> list[str]:
    """Write each changed file; the paths written, sorted."""
    written = []
    for file in formatted:
        if file.changed:
            (root / file.path).write_bytes(file.after.encode("utf-8"))
            written.append(file.path)
    return sorted(written)


def unified_diff(formatted: Formatted) -> str:
    """What formatting changes in the file, as ``diff -u`` shows it (empty when nothing)."""
    def lines(text: str) -> list[str]:
        split = text.splitlines(keepends=True)
        if split and not split[-1].endswith(("\n", "\r")):
            split[-1] += "\n\\ No newline at end of file\n"
        return split
    path = one_line(formatted.path)  # a file's name is anyone's text
    return "".join(difflib.unified_diff(lines(formatted.before), lines(formatted.after), f"a/{path}", f"b/{path}"))


class _Refused(Exception):
    """Why a file cannot be formatted, and where (1-based)."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


# How many times a file is formatted at most until its text no longer changes. Formatting once can
# leave a change to the next time: a comment that came above a list item's first key is above the
# item itself once written, and then belongs to the item, which may now fit on one line.
_PASSES = 4


def _format(path: str, content: bytes) -> str:
    """The canonical form of the file at ``path``; raises ``SpecError``."""
    # load_yaml locates bad syntax, duplicate keys and documents too deep or too large to read.
    data = load_yaml(ReadFile(PurePosixPath(path).name, content), path).data
    text = content.decode("utf-8")
    kind = _kind(path, data)
    if kind is None:
        return text
    try:
        for _ in range(_PASSES):
            text, before = _format_once(text, kind), text
            if text == before:
                return text
        raise _bug("give another text each time")
    except _Refused as error:
        raise SpecError([Problem(Source(path, error.line, error.col), error.message)]) from None


def _format_once(text: str, kind: str) -> str:
    """``text`` formatted once; raises ``_Refused``."""
    source, lines = _tree(text)
    scalars = _scalars(source, lines)
    comments = _attribute(source, *_comment_lines(text))
    values = _values(text, source)
    plan = _Plan(kind, comments.enclosing())
    while True:  # a column or mapping that cannot be one line long goes back to block style
        written, body = _tree(_dump(plan.build(values, source, inlined_schema(kind))))
        written_scalars = _scalars(written, body)
        _as_written(body, written_scalars, scalars)
        after, too_long = _weave(written, body, comments)
        failed = (too_long | _changed_scalars(plan.flowed, written_scalars, scalars)) & plan.flowed
        if not failed:
            break
        plan.failed |= failed
    _check(text, after)
    return after


def _kind_of_path(path: str) -> str | None:
    """What the file at ``path`` is by its place: "settings", "migration", "schema", or None (not formatted)."""
    pure = PurePosixPath(path)
    if path == SETTINGS_FILE:
        return "settings"
    if pure.suffix.lower() not in SUFFIXES or any(part.startswith(".") for part in pure.parts):
        return None
    if pure.parent == PurePosixPath(MIGRATIONS_DIR):
        return "migration"
    return "schema" if pure.parts[0] == SCHEMAS_DIR else None


def _kind(path: str, data: Any) -> str | None:
    """The schema the file's data follows, or None when that cannot be told (the file is left as is)."""
    kind = _kind_of_path(path)
    if not isinstance(data, dict) or not data or kind is None:
        return None
    if kind != "schema":
        return kind
    declared = [name for name in DeclarationKind if name in data]  # a schemas/ file's kind is its top-level key
    return declared[0] if len(declared) == 1 else None


# The text as PyYAML's parser sees it: entries and where they lie.

@dataclass
class _Node:
    """A value as written: its event (a scalar, an alias, a collection's start), its extent, its entries."""

    event: yaml.Event
    last: int  # its last line (0-based)
    col: int  # a collection's: the column of its keys or dashes
    entries: list[_Entry] = field(default_factory=list)


@dataclass
class _Entry:
    """A key and its value, or a list item."""

    path: NodePath
    key: yaml.ScalarEvent | None  # None for a list item
    value: _Node
    line: int  # where it starts: its key, or its item
    col: int  # the column of its key, or of its item's dash

    @property
    def last(self) -> int:
        return max(self.line, self.value.last)

    @property
    def head(self) -> int:
        """The line its end-of-line comment goes on: a block value's first line (``columns:``, ``sql: |``),
        else the value's last."""
        event = self.value.event
        if isinstance(event, yaml.CollectionStartEvent) and not event.flow_style:
            return self.line
        if isinstance(event, yaml.ScalarEvent) and event.style in ("|", ">"):
            first: int = _marks(event)[0].line
            return first
        return self.value.last


def _tree(text: str) -> tuple[_Node, list[str]]:
    """The document's root (a mapping) with every entry below it; and the text's lines."""
    lines = _LINE_BREAK.split(text)
    events = iter(_pyyaml(lambda loader: list(yaml.parse(text, Loader=loader))))
    next(events), next(events)  # the stream's and the document's start
    return _node(next(events), events, lines, ()), lines


def _node(event: yaml.Event, events: Iterator[yaml.Event], lines: list[str], path: NodePath) -> _Node:
    start, end = _marks(event)
    if isinstance(event, yaml.ScalarEvent):
        return _Node(event, _last_line(event.style, start, end, lines), start.column)
    if isinstance(event, yaml.AliasEvent):
        return _Node(event, end.line, start.column)
    assert isinstance(event, yaml.CollectionStartEvent)  # the parser's only other event inside a document
    node = _Node(event, start.line, start.column)
    for child in events:
        child_start, child_end = _marks(child)
        if isinstance(child, yaml.CollectionEndEvent):
            node.last = child_end.line if event.flow_style else max([node.last, *(e.last for e in node.entries)])
            break
        if isinstance(event, yaml.MappingStartEvent):
            assert isinstance(child, yaml.ScalarEvent)  # load_yaml refuses any other key
            entry_path = path + (child.value,)
            value = _node(next(events), events, lines, entry_path)
            node.entries.append(_Entry(entry_path, child, value, child_start.line, child_start.column))
        else:
            entry_path = path + (len(node.entries),)
            value = _node(child, events, lines, entry_path)
            col = child_start.column if event.flow_style else start.column
            node.entries.append(_Entry(entry_path, None, value, child_start.line, col))
    if node.entries:
        node.col = node.entries[0].col
    return node


def _pyyaml(read: Callable[[Any], Any]) -> Any:
    """What ``read`` makes of a text read with PyYAML's safe loader, as load_yaml reads it: by libyaml
    where PyYAML has it, else (or when libyaml refuses the text) by PyYAML's Python code, which does
    not take all that libyaml does (a tab before a comment)."""
    if yaml.__with_libyaml__:
        try:
            return read(yaml.CSafeLoader)
        except yaml.YAMLError:
            pass
    return read(yaml.SafeLoader)


def _marks(item: yaml.Event | yaml.Token) -> tuple[Any, Any]:
    """Where a token or event starts and ends (PyYAML's marks, or libyaml's of the same fields)."""
    assert item.start_mark is not None and item.end_mark is not None  # the parser sets both; the stubs allow None
    return item.start_mark, item.end_mark


def _last_line(style: str | None, start: Any, end: Any, lines: list[str]) -> int:
    """The last line of a scalar. A block scalar ends where the next token starts: the blank lines
    before it are not its text (unless kept, ``|+``), so they are blank lines of the file."""
    last: int = end.line if end.column else end.line - 1
    if style in ("|", ">"):
        header = _BLOCK_HEADER.search(lines[start.line], start.column)
        if header is None or "+" not in header.group():
            while last > start.line and not lines[last].strip():
                last -= 1
    first: int = start.line
    return max(first, last)


def _walk(node: _Node) -> Iterator[_Entry]:
    """Every entry below ``node``, in document order (an entry before those of its value)."""
    for entry in node.entries:
        yield entry
        yield from _walk(entry.value)


@dataclass(frozen=True)
class _Scalar:
    """A scalar as written: its style (None for plain, else its quote or block indicator), its value,
    where it starts, and its text when it is on one line."""

    style: str | None
    value: str
    line: int
    start: int
    text: str | None  # None: on several lines


def _scalars(root: _Node, lines: list[str]) -> dict[tuple[NodePath, bool], _Scalar]:
    """Every scalar below ``root``, by its entry's path and whether it is the key (True) or the value."""
    scalars = {}
    for entry in _walk(root):
        for is_key, event in ((True, entry.key), (False, entry.value.event)):
            if isinstance(event, yaml.ScalarEvent):
                start, end = _marks(event)
                text = lines[start.line][start.column:end.column] if end.line == start.line else None
                scalars[entry.path, is_key] = _Scalar(event.style or None, event.value, start.line, start.column, text)
    return scalars


# Comments: found with PyYAML's scanner (whose tokens cover all but comments and blanks) and given
# to the entries they belong to.

def _comment_lines(text: str) -> tuple[dict[int, tuple[int, str]], dict[int, tuple[int, str]]]:
    """The lines that hold only a comment or nothing (by line: the comment's column and text, ``""``
    for a blank line), and the comments ending a line of YAML (by line: the spaces before it, its text)."""
    lines = _LINE_BREAK.split(text)
    ends: dict[int, int] = {}  # line -> column where its YAML ends
    inside: set[int] = set()   # lines all of a scalar's text
    for token in _pyyaml(lambda loader: list(yaml.scan(text, Loader=loader))):
        start, end = _marks(token)
        if start.index == end.index:
            continue  # the scanner's zero-width tokens (a block's start and end)
        if start.line == end.line:
            ends[start.line] = max(ends.get(start.line, 0), end.column)
            continue
        style = getattr(token, "style", None)
        last = _last_line(style, start, end, lines)
        if style in ("|", ">"):  # its header line may end in a comment
            header = _BLOCK_HEADER.search(lines[start.line], start.column)
            ends[start.line] = header.end() if header else len(lines[start.line])
            inside.update(range(start.line + 1, last + 1))
        else:
            ends[start.line] = len(lines[start.line])
            inside.update(range(start.line + 1, last))
            ends[last] = max(ends.get(last, 0), end.column)
    full: dict[int, tuple[int, str]] = {}
    trailing: dict[int, tuple[int, str]] = {}
    for number, line in enumerate(lines):
        if number in inside:
            continue
        yaml_end = ends.get(number)
        rest = line if yaml_end is None else line[yaml_end:]
        comment = rest.strip(" \t")
        if yaml_end is None and (not comment or comment.startswith("#")):
            full[number] = (len(rest) - len(rest.lstrip(" \t")), comment.rstrip())
        elif comment.startswith("#"):
            trailing[number] = (len(rest) - len(rest.lstrip(" \t")), comment.rstrip())
    return full, trailing


@dataclass
class _Comments:
    """A file's comments and blank lines, each with what it belongs to (the entry or collection at a path)."""

    header: list[str] = field(default_factory=list)  # the lines heading the file
    before: dict[NodePath, list[str]] = field(default_factory=dict)  # lines above an entry
    eol: dict[NodePath, list[tuple[int, str]]] = field(default_factory=dict)  # ending an entry's line
    end: dict[NodePath, list[str]] = field(default_factory=dict)  # lines after a collection's last entry
    anchors: dict[str, NodePath] = field(default_factory=dict)  # where each anchored collection is

    def moved(self, anchors: Mapping[str, NodePath]) -> _Comments:
        """These comments, those inside an anchored collection moved to where ``anchors`` (the written
        file's) put it: reordered keys can put an alias first, and the anchor goes with the first."""
        def place(path: NodePath, inside: bool) -> NodePath:
            for name, at in sorted(self.anchors.items(), key=lambda item: -len(item[1])):
                if path[:len(at)] == at and (inside or len(path) > len(at)) and name in anchors:
                    return anchors[name] + path[len(at):]
            return path
        return _Comments(self.header, {place(path, False): lines for path, lines in self.before.items()},
                         {place(path, False): eols for path, eols in self.eol.items()},
                         {place(path, True): lines for path, lines in self.end.items()})

    def enclosing(self) -> set[NodePath]:
        """The collections that hold a comment: they must be written in block style to keep it in place."""
        paths = {path[:i] for path in [*self.before, *self.eol] for i in range(len(path))}
        return paths | {path[:i] for path in self.end for i in range(len(path) + 1)}


def _attribute(root: _Node, full: dict[int, tuple[int, str]], trailing: dict[int, tuple[int, str]]) -> _Comments:
    """Who each comment belongs to. Lines above an entry are its own, except those indented under the
    end of a list or mapping that ends above it (they close that one); the lines above the first entry
    up to the last blank one head the file; an end-of-line comment belongs to the innermost entry on its
    line (a flow collection ending on the line counts as one entry)."""
    comments = _Comments()
    entries = list(_walk(root))
    holders = {entry.path: entry for entry in entries}
    collections = {(): root} | {entry.path: entry.value for entry in entries if entry.value.entries}
    numbers = sorted(full)
    first = entries[0].line
    leading = [n for n in numbers if n < first]
    blanks = [i for i, n in enumerate(leading) if not full[n][1]]
    split = blanks[-1] + 1 if blanks else len(leading)
    comments.header = [full[n][1] for n in leading[:split]]
    while comments.header and not comments.header[0]:
        del comments.header[0]
    if leading[split:]:
        comments.before[entries[0].path] = [full[n][1] for n in leading[split:]]
    for previous, following in zip(entries, [*entries[1:], None], strict=True):
        stop = following.line if following else sys.maxsize
        gap = [full[n] for n in numbers[bisect_right(numbers, previous.line):bisect_right(numbers, stop - 1)]]
        if gap:
            _attribute_gap(gap, previous, following, collections, comments)
    starts = [entry.line for entry in entries]
    for number, comment in trailing.items():
        index = bisect_right(starts, number) - 1
        while index >= 0 and entries[index].last < number:
            index -= 1
        if index < 0:  # on a line of no entry (``--- # ...``): with the file's first or last lines
            (comments.header if number < first else comments.end.setdefault((), [])).append(comment[1])
            continue
        owner = entries[index]
        while len(owner.path) > 1 and _is_flow(holder := holders[owner.path[:-1]]) and holder.value.last == number:
            owner = holder
        comments.eol.setdefault(owner.path, []).append(comment)
    comments.anchors = _anchors(entries)
    return comments


def _anchors(entries: list[_Entry]) -> dict[str, NodePath]:
    """Where each anchored collection is."""
    return {entry.value.event.anchor: entry.path for entry in entries
            if isinstance(entry.value.event, yaml.CollectionStartEvent) and entry.value.event.anchor is not None}


def _is_flow(entry: _Entry) -> bool:
    event = entry.value.event
    return isinstance(event, yaml.CollectionStartEvent) and bool(event.flow_style)


def _attribute_gap(gap: list[tuple[int, str]], previous: _Entry, following: _Entry | None,
                   collections: Mapping[NodePath, _Node], comments: _Comments) -> None:
    """Give each line between two entries to a collection that ends there (deepest first) or to the next entry."""
    col = following.col if following else -1
    closing = [path for path in (previous.path[:i] for i in range(len(previous.path) - 1, -1, -1))
               if following is None or following.path[:len(path)] != path]
    target = 0
    pending: list[str] = []  # blank lines go with the comment after them
    for comment_col, text in gap:
        if not text:
            pending.append(text)
            continue
        while target < len(closing) and (comment_col <= col or comment_col < collections[closing[target]].col):
            target += 1
        if target < len(closing):
            lines = comments.end.setdefault(closing[target], [])
        elif following is not None:
            lines = comments.before.setdefault(following.path, [])
        else:
            lines = comments.end.setdefault((), [])  # the file's last lines, however indented
        lines.extend([*pending, text])
        pending = []
    if pending and following is not None:  # blank lines at the end of the file are dropped
        comments.before.setdefault(following.path, []).extend(pending)


# The canonical values, written by ruamel.yaml.

class _Plain(str):
    """A plain scalar's text as written (``True``, ``~``, ``0x1F``, ``2024-01-01``), written back so."""


class _Representer(RoundTripRepresenter):
    def represent_plain(self, data: _Plain) -> ScalarNode:
        # Tagged as YAML resolves the text, so that it is written without a tag and unquoted.
        return self.represent_scalar(self.dumper.resolver.resolve(ScalarNode, str(data), (True, False)), str(data))


_Representer.add_representer(_Plain, _Representer.represent_plain)


def _ruamel() -> YAML:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.indent(mapping=2, sequence=4, offset=2)
    rt.width = sys.maxsize  # long scalars are never folded onto more lines
    rt.brace_single_entry_mapping_in_flow_sequence = True  # [{ds: "1"}], not [ds: "1"]
    rt.Representer = _Representer
    return rt


def _values(text: str, root: _Node) -> Any:
    """The file's values as ruamel.yaml loads them, as far as ``_Plan`` reads them: built from PyYAML's
    events (``root``), which say all it needs (a quoted or literal scalar's style and value), but for a
    file with a folded scalar (whose line breaks only ruamel.yaml keeps) or a tag, which ruamel.yaml
    loads. Its pure-Python load was half of fmt's time."""
    events = [root.event, *(event for entry in _walk(root) for event in (entry.key, entry.value.event))]
    if any(_loaded_by_ruamel(event) for event in events):
        return _load_ruamel(text)
    return _from_events(root, {})


def _loaded_by_ruamel(event: yaml.Event | None) -> bool:
    """Whether ruamel.yaml's own load must read the node of ``event``: a tagged one, or a folded scalar."""
    if isinstance(event, yaml.ScalarEvent):
        return event.tag is not None or event.style == ">"
    return isinstance(event, yaml.CollectionStartEvent) and event.tag is not None


class _Pairs(list[tuple[Any, Any]]):
    """A mapping's keys and values in order, read as ``dict.items()`` (a plain 1 and a quoted '1' are two keys)."""

    def items(self) -> _Pairs:
        return self


# ruamel.yaml's types of the scalars whose style it keeps, by PyYAML's style.
_STYLED = {"'": SingleQuotedScalarString, '"': DoubleQuotedScalarString, "|": LiteralScalarString}


def _from_events(node: _Node, anchored: dict[str, Any]) -> Any:
    """What ruamel.yaml loads for ``node`` (untagged, with no folded scalar), as ``_Plan`` reads it: a plain
    scalar's value is its text (``_Plan`` writes that back), an empty one None; an alias, the very value
    its anchor names."""
    event = node.event
    if isinstance(event, yaml.AliasEvent):
        assert event.anchor is not None  # an alias names its anchor; the stubs allow None
        return anchored[event.anchor]
    if isinstance(event, yaml.ScalarEvent):
        value: Any = _STYLED[event.style](event.value) if event.style else (event.value or None)
    elif isinstance(event, yaml.MappingStartEvent):
        value = _Pairs()
    else:
        value = []
    assert isinstance(event, yaml.NodeEvent)
    if event.anchor is not None:
        anchored[event.anchor] = value
    for entry in node.entries:  # in the document's order, so that each anchor comes before its aliases
        key = None if entry.key is None else _from_events(_Node(entry.key, entry.line, entry.col), anchored)
        item = _from_events(entry.value, anchored)
        value.append(item if entry.key is None else (key, item))
    return value


def _load_ruamel(text: str) -> Any:
    try:
        return _ruamel().load(text)
    except MarkedYAMLError as error:  # PyYAML read it; ruamel.yaml may refuse what it does not support
        mark = error.problem_mark or error.context_mark
        message = f"cannot format this file: {error.problem or error.context}"
        raise _Refused(message, *((mark.line + 1, mark.column + 1) if mark else ())) from None


def _dump(data: Any) -> str:
    stream = io.StringIO()
    _ruamel().dump(data, stream)
    return stream.getvalue()


@dataclass
class _Plan:
    """How to build the canonical values: what must be block style, what was tried on one line."""

    kind: str
    block: set[NodePath]  # collections that hold comments
    failed: set[NodePath] = field(default_factory=set)  # one-line candidates that did not fit
    flowed: set[NodePath] = field(default_factory=set)  # one-line candidates written in flow style
    anchored: dict[int, Any] = field(default_factory=dict)  # id of an anchored value -> its canonical copy

    def build(self, value: Any, root: _Node, schema: Mapping[str, Any]) -> Any:
        """The whole file's canonical values."""
        self.flowed, self.anchored = set(), {}
        return self.canonical(value, root, schema, ())

    def canonical(self, value: Any, node: _Node, schema: Mapping[str, Any], path: NodePath) -> Any:
        """``value`` (ruamel's, of ``node`` as written) in canonical order and style, without comments."""
        event = node.event
        if isinstance(event, yaml.AliasEvent):
            return self.anchored[id(value)]
        if isinstance(event, yaml.ScalarEvent):
            built = _Plain(event.value) if not event.style and event.value and event.implicit[0] else value
            if isinstance(value, (LiteralScalarString, FoldedScalarString)):
                # The comment after its | or >, woven back with the others (an attribute ruamel's types do not declare).
                setattr(value, "comment", None)  # noqa: B010
        elif isinstance(event, yaml.MappingStartEvent):
            built = self.mapping(value, node, schema, path)
        else:
            items = schema.get("items")
            built = CommentedSeq(self.canonical(item, entry.value, _branch(items, item) if isinstance(items, dict) else {},
                                                entry.path)
                                 for item, entry in zip(value, node.entries, strict=False))
            self.style(built, node, path, False)
        assert isinstance(event, yaml.NodeEvent)
        if event.anchor is not None:
            self.anchored[id(value)] = built
            if isinstance(built, (CommentedMap, CommentedSeq)):
                built.yaml_set_anchor(event.anchor, always_dump=True)
        return built

    def mapping(self, value: Any, node: _Node, schema: Mapping[str, Any], path: NodePath) -> CommentedMap:
        for entry in node.entries:  # ruamel.yaml folds the mapping a merge key names into this one
            if entry.key is not None and entry.key.value == "<<" and not entry.key.style:
                raise _Refused("cannot format a merge key (<<): write out the keys it merges",
                               entry.line + 1, entry.col + 1)
        properties = schema.get("properties")
        known: Mapping[str, Any] = properties if isinstance(properties, dict) else {}
        others = schema.get("additionalProperties")
        free = _free_form(schema)
        pairs = []
        for (key, item), entry in zip(value.items(), node.entries, strict=False):
            assert entry.key is not None
            item_schema = known.get(entry.key.value, others if isinstance(others, dict) else {})
            pairs.append((entry.key, self.canonical(key, _Node(entry.key, entry.line, entry.col), {}, entry.path),
                          self.canonical(item, entry.value, item_schema, entry.path)))
        order = list(known)
        pairs.sort(key=lambda pair: pair[0].value if free else (
            order.index(pair[0].value) if pair[0].value in known else len(order)))
        built = CommentedMap((key, item) for _, key, item in pairs)
        self.style(built, node, path, free or self.columns(path[:-1]))
        return built

    def columns(self, path: NodePath) -> bool:
        """Whether ``path`` is a list of columns, written one column a line (unless it holds an Iceberg table's
        partition fields)."""
        return self.kind in tuple(DeclarationKind) and len(path) == 1 and path[0] in _COLUMN_LISTS

    def style(self, built: CommentedMap | CommentedSeq, node: _Node, path: NodePath, one_line: bool) -> None:
        """Block or flow style: ``one_line`` on one line if it can be, others as written (a list of columns,
        the file itself and what holds a comment in block style)."""
        terms = isinstance(built, CommentedSeq) and any(isinstance(item, str) for item in built)
        if not path or path in self.block or path in self.failed or self.columns(path) and not terms:
            flow = False
        elif one_line:
            flow = True
            self.flowed.add(path)
        else:
            flow = isinstance(node.event, yaml.CollectionStartEvent) and bool(node.event.flow_style)
        if flow:
            built.fa.set_flow_style()
        else:
            built.fa.set_block_style()


def _branch(schema: Mapping[str, Any], value: Any) -> Mapping[str, Any]:
    """The schema ``value`` is written by: an ``if``'s ``then`` or ``else`` by what the value is (``partitioned_by``
    holds an Iceberg table's partition fields as text and a Hive table's columns as mappings), else ``schema``."""
    if "if" not in schema:
        return schema
    branch = schema.get("then" if compile_schema(schema["if"])(value) else "else", {})
    return branch if isinstance(branch, dict) else {}


def _free_form(schema: Mapping[str, Any]) -> bool:
    """Whether the schema describes a mapping of names the user chooses to any scalar value (``properties``,
    ``options``, ``serde_properties``, ``spark.conf``): its keys have no order of their own, so they are sorted."""
    values = schema.get("additionalProperties")
    return ("properties" not in schema and isinstance(values, dict) and isinstance(values.get("type"), list)
            and set(values["type"]) == {"string", "number", "boolean"})


def _as_written(lines: list[str], written: Mapping[tuple[NodePath, bool], _Scalar],
                source: Mapping[tuple[NodePath, bool], _Scalar]) -> None:
    """Each quoted scalar of ``lines`` that was written on one line given its text as written: ruamel.yaml
    writes the same value in the same quotes, but escapes characters its own way (``\\u00e9`` as ``é``)."""
    for where, scalar in sorted(written.items(), key=lambda item: (item[1].line, -item[1].start)):
        was = source.get(where)
        if (was is None or was.text is None or scalar.text is None or scalar.style not in ("'", '"')
                or (was.style, was.value) != (scalar.style, scalar.value)):
            continue
        line = lines[scalar.line]
        lines[scalar.line] = line[:scalar.start] + was.text + line[scalar.start + len(scalar.text):]


def _changed_scalars(candidates: set[NodePath], written: Mapping[tuple[NodePath, bool], _Scalar],
                     source: Mapping[tuple[NodePath, bool], _Scalar]) -> set[NodePath]:
    """The one-line candidates in which a scalar is not written as it was: flow style cannot hold a plain
    ``decimal(12,2)`` or an empty value unquoted."""
    changed = set()
    for (path, is_key), scalar in written.items():
        was = source.get((path, is_key), scalar)
        if (was.style, was.value) != (scalar.style, scalar.value):
            changed |= {path[:i] for i in range(len(path) + 1)} & candidates
    return changed


def _weave(root: _Node, body: list[str], comments: _Comments) -> tuple[str, set[NodePath]]:
    """The values written without comments (``root`` parsed from its lines ``body``) with the comments
    put back; and the flow collections whose line is now longer than ``LINE_WIDTH``."""
    entries = list(_walk(root))
    comments = comments.moved(_anchors(entries))
    holders = {entry.path: entry for entry in entries}
    collections = {(): root} | {entry.path: entry.value for entry in entries if entry.value.entries}
    if (comments.before.keys() | comments.eol.keys()) - holders.keys() or comments.end.keys() - collections.keys():
        raise _bug("move comments away from their entries")
    first: dict[int, _Entry] = {}  # the outermost entry starting on each line: comments above it go at its column
    above: dict[int, list[str]] = {}  # body line -> the comment lines to write above it
    for entry in entries:
        first.setdefault(entry.line, entry)
        if entry.path in comments.before:
            above.setdefault(entry.line, []).extend(_indent(first[entry.line].col, comments.before[entry.path]))
    below: dict[int, list[str]] = {}  # body line -> lines to write after it, deepest collection first
    for path in sorted(comments.end, key=len, reverse=True):
        collection = collections[path]
        below.setdefault(collection.last, []).extend(_indent(collection.col, comments.end[path]))
    ends: dict[int, list[tuple[int, str]]] = {}
    for path, eols in comments.eol.items():
        ends.setdefault(holders[path].head, []).extend(eols)
    lines = [*comments.header]
    woven: dict[int, int] = {}  # body line -> its line in the result
    for number, line in enumerate(body[:-1]):  # the last is empty: the text ends with a line break
        lines.extend(above.get(number, []))
        eols = ends.get(number, [])
        # Two end-of-line comments for one line (its entries were on two): all but the last go above it.
        lines.extend(_indent(len(line) - len(line.lstrip(" ")), [text for _, text in eols[:-1]]))
        woven[number] = len(lines)
        lines.append(f"{line}{' ' * eols[-1][0]}{eols[-1][1]}" if eols else line)
        lines.extend(below.get(number, []))
    too_long = {entry.path for entry in entries if _is_flow(entry) and len(lines[woven[entry.head]]) > LINE_WIDTH}
    return "\n".join(lines).lstrip("\n") + "\n", too_long  # blank lines moved to the top are dropped


def _indent(col: int, texts: list[str]) -> list[str]:
    return [" " * col + text if text else "" for text in texts]


def _bug(what: str) -> _Refused:
    return _Refused(f"formatting would {what} (a bug in schemaflow fmt): the file is left as it is")


def _check(before: str, after: str) -> None:
    """Refuse a result that does not hold the original's data and comments: formatting must not change them."""
    if after == before:  # a file already formatted, as most are
        return
    try:
        if _data(after) != _data(before):
            raise _bug("change its data")
    except yaml.YAMLError:
        raise _bug("make it text that is not YAML") from None
    if _all_comments(before) != _all_comments(after):
        raise _bug("change its comments")


def _data(text: str) -> Any:
    """What PyYAML's safe loader reads in ``text``."""
    return _pyyaml(lambda loader: yaml.load(text, Loader=loader))


def _all_comments(text: str) -> Counter[str]:
    full, trailing = _comment_lines(text)
    return Counter(comment for _, comment in [*full.values(), *trailing.values()] if comment)
