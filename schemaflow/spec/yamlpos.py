"""YAML read with the position of every value, so each error can point at ``file:line:col``.

PyYAML's composer gives a node tree with marks; this module turns it into plain Python values
(dicts with string keys, lists, scalars) plus a lookup from a path such as
``("columns", 2, "type")`` to the position of that value and of the key that names it. It also
maps a position inside a text value (say, an error in a view's SQL) back into the file. Duplicate
keys, which PyYAML would silently collapse, are errors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import yaml
from yaml.constructor import SafeConstructor
from yaml.reader import ReaderError

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Source
from schemaflow.spec.source import ProjectFile

NodePath = tuple[str | int, ...]


@dataclass(frozen=True)
class _Text:
    """Where a text value's content lies in the file, to map positions inside it."""

    style: str | None   # "|" literal, ">" folded, a quote character, or None (plain)
    single_line: bool   # written on one line (never for block scalars)
    content_line: int   # literal blocks: 1-based line of the first content line (after the "|")
    indent: int         # literal blocks: how far the content is indented


@dataclass(frozen=True)
class Document:
    """One YAML file's data and the position of each of its values and keys."""

    path: str
    data: Any
    values: Mapping[NodePath, Source]
    keys: Mapping[NodePath, Source]
    texts: Mapping[NodePath, _Text]

    def at(self, *path: str | int) -> Source:
        """The position of the value at ``path``, or of its nearest ancestor that exists."""
        for end in range(len(path), 0, -1):
            if path[:end] in self.values:
                return self.values[path[:end]]
        return self.values.get((), Source(self.path))

    def key(self, *path: str | int) -> Source:
        """The position of the mapping key naming the value at ``path`` (else of the value)."""
        return self.keys.get(path) or self.at(*path)

    def within(self, path: NodePath, line: int, col: int) -> Source:
        """The file position of 1-based ``line``/``col`` inside the text value at ``path``.

        Exact for literal blocks (``|``) and single-line scalars; for folded or multi-line plain
        text, whose lines YAML joins, the start of the value.
        """
        text = self.texts.get(path)
        start = self.at(*path)
        if text is None:
            return start
        if text.style == "|":
            return Source(self.path, text.content_line + line - 1, text.indent + col)
        if text.single_line and line == 1:
            quote = 1 if text.style else 0
            return Source(self.path, start.line, start.col + quote + col - 1)
        return start


def load_yaml(file: ProjectFile, display_path: str) -> Document:
    """Read one YAML document; raises ``SpecError`` for bad syntax or duplicate keys."""
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        problem = Problem(Source(display_path), f"cannot read the file: it is not UTF-8 text (byte {error.start})")
        raise SpecError([problem]) from error
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (ReaderError, yaml.MarkedYAMLError) as error:
        raise SpecError([_syntax_problem(error, text, display_path)]) from error
    builder = _Builder(display_path, text.splitlines())
    data = None if root is None else builder.value(root, ())
    if builder.problems:
        raise SpecError(builder.problems)
    return Document(display_path, data, builder.values, builder.keys, builder.texts)


def _syntax_problem(error: ReaderError | yaml.MarkedYAMLError, text: str, path: str) -> Problem:
    """PyYAML's error at the mark it reports (a character it refuses: at that character)."""
    if isinstance(error, ReaderError):
        line = text.count("\n", 0, error.position)
        col = error.position - (text.rfind("\n", 0, error.position) + 1)
        message = f"invalid YAML: {error.reason} (character #x{error.character:04x})"
        return Problem(Source(path, line + 1, col + 1), message)
    mark = error.problem_mark or error.context_mark
    message = f"invalid YAML: {error.problem or error.context}"
    if error.context and error.problem and error.context_mark is not None:
        message += f" ({error.context} started on line {error.context_mark.line + 1})"
    return Problem(Source(path, mark.line + 1, mark.column + 1) if mark else Source(path), message)


class _Builder:
    """Walks the node tree once, recording positions as it builds plain values."""

    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        self.constructor = SafeConstructor()
        self.values: dict[NodePath, Source] = {}
        self.keys: dict[NodePath, Source] = {}
        self.texts: dict[NodePath, _Text] = {}
        self.problems: list[Problem] = []
        self.open: set[int] = set()  # the collections being built, to refuse an alias to an ancestor

    def source(self, mark: yaml.Mark) -> Source:
        return Source(self.path, mark.line + 1, mark.column + 1)

    def value(self, node: yaml.Node, path: NodePath) -> Any:
        self.values[path] = self.source(node.start_mark)
        if isinstance(node, yaml.CollectionNode):
            if id(node) in self.open:
                self.problems.append(Problem(self.values[path], "a YAML alias refers back to this node from inside it"))
                return None
            self.open.add(id(node))
            value = self.mapping(node, path) if isinstance(node, yaml.MappingNode) else self.sequence(node, path)
            self.open.discard(id(node))
            return value
        try:
            value = self.constructor.construct_object(node)
        except (yaml.YAMLError, ValueError) as error:
            reason = error.problem if isinstance(error, yaml.MarkedYAMLError) else error
            self.problems.append(Problem(self.values[path], f"cannot read this value: {reason}"))
            return None
        if isinstance(value, str):
            self.texts[path] = self.text(node, value)
        return value

    def sequence(self, node: yaml.SequenceNode, path: NodePath) -> list[Any]:
        return [self.value(item, path + (i,)) for i, item in enumerate(node.value)]

    def mapping(self, node: yaml.MappingNode, path: NodePath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            where = self.source(key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(Problem(where, "a key must be a plain name, not a list or mapping"))
                continue
            key = key_node.value
            if key in result:
                first = self.keys[path + (key,)]
                self.problems.append(Problem(where, f"duplicate key '{key}' (first set on line {first.line})"))
                continue
            self.keys[path + (key,)] = where
            result[key] = self.value(value_node, path + (key,))
        return result

    def text(self, node: yaml.ScalarNode, value: str) -> _Text:
        start, end = node.start_mark, node.end_mark
        if node.style != "|":
            return _Text(node.style, start.line == end.line, 0, 0)
        content_line = start.line + 2  # block content starts on the line after the indicator
        return _Text(node.style, False, content_line, self.indent(content_line, value))

    def indent(self, content_line: int, value: str) -> int:
        """How many characters of each file line precede a literal block's content."""
        for offset, text in enumerate(value.splitlines()):
            if text.strip() and content_line + offset <= len(self.lines):
                return len(self.lines[content_line + offset - 1]) - len(text)
        return 0
