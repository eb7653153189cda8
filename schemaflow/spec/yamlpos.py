"""YAML read with the position of every value, so each error can point at ``file:line:col``.

PyYAML's composer gives a node tree with marks; this module turns it into plain Python values
(dicts with string keys, lists, scalars) plus a lookup from a path such as
``("columns", 2, "type")`` to the position of that value and of the key that names it. It also
maps a position inside a text value (say, an error in a view's SQL) back into the file. Duplicate
keys, which PyYAML would silently collapse, are errors.

The work is bounded, whatever the file holds: a document nested deeper than ``MAX_DEPTH`` or that
would expand past ``MAX_VALUES`` values (a few lines of aliases that name aliases, the "billion
laughs", expand to billions) is refused while it is composed, before any value is built. A project
read within ``project_bounds`` is also bounded as a whole: its files' bytes (``MAX_FILE_BYTES``
each, ``MAX_PROJECT_BYTES`` in all) and the values its aliases add (``MAX_PROJECT_ALIASED`` across
its files, each alias a full copy of what it names), so that many files each just within the bounds
of one are refused too, at the file or alias that crosses, before they are built. A lone
UTF-16 surrogate written as an escape (``"\\ud800"``), which no file or metastore can store, is
refused at its escape.

Characters that could forge what a reviewer reads (``output_safety``) are refused where they are
written, raw or as an escape: ESC, the other C1 controls, bidirectional overrides and zero-width
characters anywhere, and every control character (CR and LF too) and default-ignorable character in
a key. A key that is not ASCII is held to ``spec.keys``: the characters it may hold, NFKC (two keys of a
mapping equal after it are one key written twice) and no whole-script look-alike of ASCII text.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from collections.abc import Iterator, Mapping

import yaml
from yaml.constructor import SafeConstructor
from yaml.reader import ReaderError

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Source
from schemaflow.output_safety import HOSTILE_IN_KEYS, HOSTILE_IN_VALUES, character_name, escape_character, mixed_scripts
from schemaflow.spec.keys import UNLISTED, look_alike, not_plain, passes_for_ascii, plain, unlisted
from schemaflow.spec.source import ProjectFile

NodePath = tuple[str | int, ...]
Position = tuple[int, int]

# A file of thousands of columns builds into some tens of thousands of values; nested aliases can
# make a few lines build into billions. Far above the one, far below the other:
MAX_VALUES = 1_000_000
# Schema files nest a handful of levels; composing and building recurse once per level.
MAX_DEPTH = 64
# One table or view a file: the largest real ones (thousands of commented columns) are a few hundred KB.
MAX_FILE_BYTES = 2 * 1024 * 1024
# A project's files together: 11,000 objects take about 10 MB.
MAX_PROJECT_BYTES = 256 * 1024 * 1024
# Values the aliases of a project's files add, all files together: a shared list of columns reused
# by a hundred views adds some thousands; a few files of nested aliases, each within MAX_VALUES,
# would add millions (seconds of work and gigabytes each).
MAX_PROJECT_ALIASED = 100_000


@dataclass
class Budget:
    """What is left of a project's bounds as its files are read."""

    bytes: int = field(default_factory=lambda: MAX_PROJECT_BYTES)
    aliased: int = field(default_factory=lambda: MAX_PROJECT_ALIASED)


_BUDGET: ContextVar[Budget | None] = ContextVar("schemaflow_project_budget", default=None)


@contextmanager
def project_bounds(budget: Budget | None = None) -> Iterator[Budget]:
    """Hold the files read in this block to the bounds of one project, together: a whole project's, or what
    ``budget`` has left of them (it is spent as they are read)."""
    spent = Budget() if budget is None else budget
    token = _BUDGET.set(spent)
    try:
        yield spent
    finally:
        _BUDGET.reset(token)


class _Text(NamedTuple):
    """Where a text value's content lies in the file, to map positions inside it (a tuple: one is made for each
    text value of a file)."""

    style: str | None   # "|" literal, ">" folded, a quote character, or None (plain)
    single_line: bool   # written on one line (never for block scalars)
    content_line: int   # literal blocks: 1-based line of the first content line (after the "|")
    indent: int         # literal blocks: how far the content is indented


class _Read(NamedTuple):
    """What reading a file finds: its data, and the position of each of its values and keys."""

    data: Any
    # 1-based (line, column) of each value and key: made into a Source only when asked for, as few are.
    values: Mapping[NodePath, Position]
    keys: Mapping[NodePath, Position]
    texts: Mapping[NodePath, _Text]  # of the top-level text values (a view's sql)
    # The text as written of each plain (unquoted) scalar YAML read as other than text: YAML 1.1 reads
    # ``NO``, ``1.10``, ``030``, ``2024-01-01`` or ``~`` as a boolean, a number, a date or null, where
    # the file may have meant the text.
    plain: Mapping[NodePath, str]


class Document:
    """One YAML file's data and the position of each of its values and keys.

    Pickled as its path and text alone (a process that read the file sends it back so, ``spec.loader``):
    the data and positions are then read again from the text when first asked for, as a problem's
    position, which most documents never are.
    """

    __slots__ = ("path", "text", "_read")

    def __init__(self, path: str, text: str, read: _Read | None = None) -> None:
        self.path = path
        self.text = text
        self._read = read

    def __reduce__(self) -> tuple[type[Document], tuple[str, str]]:
        return Document, (self.path, self.text)

    @property
    def read(self) -> _Read:
        if self._read is None:  # unpickled: the text was read once already, within its bounds
            self._read = _read_text(self.path, self.text)
        return self._read

    @property
    def data(self) -> Any:
        return self.read.data

    @property
    def plain(self) -> Mapping[NodePath, str]:
        return self.read.plain

    def written(self, *path: str | int) -> str | None:
        """The plain scalar at ``path`` as written (``NO``, not False) if YAML read it as other than text;
        None for any other value."""
        return self.plain.get(path)

    def at(self, *path: str | int) -> Source:
        """The position of the value at ``path``, or of its nearest ancestor that exists."""
        values = self.read.values
        for end in range(len(path), -1, -1):
            if path[:end] in values:
                return Source(self.path, *values[path[:end]])
        return Source(self.path)

    def key(self, *path: str | int) -> Source:
        """The position of the mapping key naming the value at ``path`` (else of the value)."""
        position = self.read.keys.get(path)
        return Source(self.path, *position) if position else self.at(*path)

    def within(self, path: NodePath, line: int, col: int) -> Source:
        """The file position of 1-based ``line``/``col`` inside the text value at ``path``.

        Exact for top-level literal blocks (``|``) and single-line scalars; for folded or multi-line plain
        text, whose lines YAML joins, and for a value nested deeper, the start of the value.
        """
        text = self.read.texts.get(path)
        start = self.at(*path)
        if text is None:
            return start
        if text.style == "|":
            return Source(self.path, text.content_line + line - 1, text.indent + col)
        if text.single_line and line == 1:
            quote = 1 if text.style else 0
            return Source(self.path, start.line, start.col + quote + col - 1)
        return start


def read_bytes(file: ProjectFile, display_path: str) -> bytes:
    """The bytes of ``file``; raises ``SpecError`` when they cannot be read, or are more than its bounds allow."""
    try:
        stat = getattr(file, "stat", None)  # a file on disk: too large is refused before it is read
        size = stat().st_size if stat is not None else 0
        if size > MAX_FILE_BYTES:
            raise SpecError([_too_large(display_path, size)])
        content = file.read_bytes()
    except OSError as error:
        raise SpecError([Problem(Source(display_path), f"cannot read the file: {error.strerror}")]) from error
    if len(content) > MAX_FILE_BYTES:
        raise SpecError([_too_large(display_path, len(content))])
    return content


def _too_large(display_path: str, size: int) -> Problem:
    return Problem(Source(display_path), f"the file is {size:,} bytes: schemaflow reads files of at most "
                                         f"{MAX_FILE_BYTES:,} bytes (one table or view a file); split it")


def load_yaml(file: ProjectFile, display_path: str) -> Document:
    """Read one YAML document; raises ``SpecError`` for bad syntax or duplicate keys."""
    content = read_bytes(file, display_path)
    budget = _BUDGET.get()
    if budget is not None:
        budget.bytes -= len(content)
        if budget.bytes < 0:
            raise SpecError([Problem(Source(display_path), (
                f"this file takes the project past {MAX_PROJECT_BYTES:,} bytes of YAML: schemaflow reads at most "
                f"{MAX_PROJECT_BYTES:,}; split the project"))])
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = Problem(Source(display_path), f"cannot read the file: it is not UTF-8 text (byte {error.start})")
        raise SpecError([problem]) from error
    return Document(display_path, text, _read_text(display_path, text))


def _read_text(display_path: str, text: str) -> _Read:
    """What ``text`` holds; raises ``SpecError`` for bad syntax, duplicate keys, or past its bounds."""
    builder = _Builder(display_path, text)
    try:
        root = compose(text)
        try:
            data = None if root is None else builder.value(root, ())
        except _PastBounds as past:
            # PyYAML's composer counts alike and says where the text as written breaks a bound. What it
            # accepts nests too deep only through aliases, each a copy of what it names.
            compose_pure(text)
            raise _Unbounded(past.mark, f"YAML aliases nest this value more than {MAX_DEPTH} levels deep: "
                                        f"schemaflow reads at most {MAX_DEPTH} levels; use fewer aliases") from None
    except (ReaderError, yaml.MarkedYAMLError) as error:
        raise SpecError([_syntax_problem(error, text, display_path)]) from error
    except _Unbounded as error:
        raise SpecError([Problem(_mark_source(display_path, error.mark), error.message)]) from None
    if builder.problems:
        raise SpecError(builder.problems)
    return _Read(data, builder.values, builder.keys, builder.texts, builder.plain)


def _syntax_problem(error: ReaderError | yaml.MarkedYAMLError, text: str, path: str) -> Problem:
    """PyYAML's error at the mark it reports (a character it refuses: at that character)."""
    if isinstance(error, ReaderError):
        message = f"invalid YAML: {error.reason} (character #x{error.character:04x})"
        return Problem(_offset_source(path, text, error.position), message)
    mark = error.problem_mark or error.context_mark
    message = f"invalid YAML: {error.problem or error.context}"
    if error.context and error.problem and error.context_mark is not None:
        message += f" ({error.context} started on line {error.context_mark.line + 1})"
    return Problem(_mark_source(path, mark) if mark else Source(path), message)


def _mark_source(path: str, mark: Any) -> Source:
    return Source(path, mark.line + 1, mark.column + 1)


def _offset_source(path: str, text: str, offset: int) -> Source:
    """The position of the character at ``offset`` in ``text``."""
    return Source(path, text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset))


class _Unbounded(Exception):
    """A document too deep or too large to build, at the node or alias that makes it so."""

    def __init__(self, mark: Any, message: str) -> None:  # PyYAML's Mark, or libyaml's of the same fields
        super().__init__(message)
        self.mark = mark
        self.message = message


def compose_pure(text: str) -> yaml.Node | None:
    """The node tree of ``text``, scanned and parsed by PyYAML's pure-Python code (slow; exact messages)."""
    loader = _BoundedLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    if loader.over_budget is not None:  # the file alone is within its bounds: the project is not
        raise _Unbounded(loader.over_budget, (
            f"this alias takes the project past {MAX_PROJECT_ALIASED:,} values added by aliases (its files together, "
            f"each alias counted as a full copy of what it names): schemaflow reads at most {MAX_PROJECT_ALIASED:,}; "
            "use fewer aliases"))
    _charge(loader.aliased)
    return root


def _charge(aliased: int) -> bool:
    """Take ``aliased`` values from the project's budget; False (nothing taken) when that would overdraw it."""
    budget = _BUDGET.get()
    if budget is None or not aliased:
        return True
    if aliased > budget.aliased:
        return False
    budget.aliased -= aliased
    return True


def compose(text: str) -> yaml.Node | None:
    """The node tree of ``text``, composed by libyaml (in C) where PyYAML has it, else by PyYAML's Python.

    libyaml's composer recurses in C once per level of nesting, and a document nested deep enough
    crashes the process (measured: 100,000 levels), so it only gets a document that cannot nest
    past ``C_DEPTH`` (each level takes one of ``[{-:?``). Its tree is held to the bounds the
    Python composer enforces: by ``_within_bounds`` before anything is built when the text could
    hold an anchor (only aliases, each a copy, make a few lines build into millions of values),
    and by the builder as it builds (counting as ``_BoundedLoader`` does). A document it refuses,
    that breaks a bound, or that holds a character PyYAML's reader refuses (libyaml accepts some),
    is composed again by PyYAML's Python composer, for its exact message at its place.
    """
    if not yaml.__with_libyaml__ or _NON_PRINTABLE.search(text) or _nesting_bound(text) > C_DEPTH:
        return compose_pure(text)
    try:
        root = yaml.compose(text, Loader=_CLoader)
    except yaml.YAMLError:
        return compose_pure(text)
    # No "&", no anchor, no alias: the builder's own count is then bound enough (most files).
    if root is None or "&" not in text:
        return root
    aliased = _aliased_within_bounds(root)
    return root if aliased is not None and _charge(aliased) else compose_pure(text)


# Far below the nesting that crashes libyaml's composer, far above what a schema file holds.
C_DEPTH = 10_000


def _nesting_bound(text: str) -> int:
    """How deep ``text`` can nest at most: each level opens with one of ``[``, ``{``, ``-``, ``:`` or ``?``."""
    return 1 + sum(text.count(indicator) for indicator in "[{-:?")


def _aliased_within_bounds(root: yaml.Node) -> int | None:
    """How many values the tree's aliases add, if it nests at most ``MAX_DEPTH`` levels as written and
    builds into at most ``MAX_VALUES`` values (each alias a full copy), as ``_BoundedLoader`` counts
    while it composes; None if it does not.

    Walked in document order, so a node is first met where it is written (an anchor comes before
    its aliases), without recursion.
    """
    sizes: dict[int, int] = {}   # id(node) -> how many values it builds into
    open_: set[int] = set()      # collections being walked: an alias to one of them counts 1, as composing does
    aliased = 0
    todo: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while todo:
        node, depth, finished = todo.pop()
        if finished:
            open_.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in _children(node))
            continue
        if id(node) in sizes or id(node) in open_:
            aliased += sizes.get(id(node), 1)  # an alias
            continue
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, yaml.CollectionNode):
            open_.add(id(node))
            todo.append((node, depth, True))
            todo.extend((child, depth + 1, False) for child in reversed(_children(node)))
        else:
            sizes[id(node)] = 1
    return aliased if sizes[id(root)] <= MAX_VALUES else None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


_IMPLICIT: dict[str | None, list[tuple[str, re.Pattern[str]]]] = yaml.SafeLoader.yaml_implicit_resolvers
# Each first character's implicit resolvers, the wildcard's after them, as PyYAML's resolver tries them.
_RESOLVERS = {first: tuple(resolvers + _IMPLICIT.get(None, [])) for first, resolvers in _IMPLICIT.items()
              if first is not None}
_ANY_FIRST = tuple(_IMPLICIT.get(None, []))


class _CLoader(yaml.CSafeLoader):
    """libyaml's safe loader resolving tags as PyYAML's resolver does, without what it does for path resolvers,
    which the safe loader has none of: libyaml calls ``resolve`` once per node, and Python's bookkeeping around
    it was a tenth of a project's validation."""

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, pattern in _RESOLVERS.get(value[:1], _ANY_FIRST):
                    if pattern.match(value):
                        return tag
            return self.DEFAULT_SCALAR_TAG
        return self.DEFAULT_SEQUENCE_TAG if kind is yaml.SequenceNode else self.DEFAULT_MAPPING_TAG


class _PastBounds(Exception):
    """The builder counted past ``MAX_VALUES`` values or ``MAX_DEPTH`` levels, at the node at ``mark``."""

    def __init__(self, mark: Any) -> None:
        super().__init__()
        self.mark = mark


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing while it composes a document nested or expanding too far.

    Composing keeps an alias as one more reference to its anchor's node, so the node tree stays
    as small as the text; building plain values copies each alias out in full. So the size each
    node builds into (its aliases expanded) is counted here, once per node, and the document is
    refused at the alias (or node) that takes it past ``MAX_VALUES``, before anything is built.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.sizes: dict[int, int] = {}  # id(node) -> how many values it builds into
        self.total = 0                   # how many values the document builds into so far
        self.depth = 0
        self.aliased = 0                 # how many of them its aliases add
        budget = _BUDGET.get()
        self.allowed = None if budget is None else budget.aliased  # what the project's bounds leave for those
        self.over_budget: Any = None     # the mark of the alias that takes the project past them

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            assert node is not None  # the stubs allow None, but PyYAML composes a node for every event
            # An alias to an ancestor still being composed has no size yet: the builder refuses it.
            size = self.sizes.get(id(node), 1)
            self.count(size, event, "this alias")
            self.aliased += size
            if self.allowed is not None and self.aliased > self.allowed and self.over_budget is None:
                self.over_budget = event.start_mark  # reported once the file is known to be within its own
            return node
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Unbounded(event.start_mark, f"YAML nested more than {MAX_DEPTH} levels deep here: schemaflow "
                                               f"reads at most {MAX_DEPTH} levels; flatten the data")
        node = super().compose_node(parent, index)
        assert node is not None  # as above
        self.depth -= 1
        children = node.value if isinstance(node, yaml.SequenceNode) else (
            [child for pair in node.value for child in pair] if isinstance(node, yaml.MappingNode) else [])
        self.sizes[id(node)] = 1 + sum(self.sizes.get(id(child), 1) for child in children)
        self.count(1, event, "this value")
        return node

    def count(self, values: int, event: yaml.Event, what: str) -> None:
        self.total += values
        if self.total > MAX_VALUES:
            message = (f"{what} takes the file past {MAX_VALUES:,} values (keys and list items included, each "
                       f"alias counted as a full copy of what it names): schemaflow reads at most {MAX_VALUES:,}; "
                       "use fewer aliases, or split the file")
            raise _Unbounded(event.start_mark, message)


# What PyYAML's reader refuses as a character of a document.
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE
_STR_TAG = "tag:yaml.org,2002:str"
# How a double-quoted scalar writes a 16-bit code (\u or \U0000), not after a backslash that escapes its own.
_SURROGATE_ESCAPE = r"(?<!\\)\\(?:u|U0000)"
_SURROGATE = re.compile("[\ud800-\udfff]")
# What a text may hold that ``_Builder.characters`` looks at closer: a hostile character or a surrogate.
# (Each a character class: one class of both.)
_SUSPECT = {hostile: re.compile(hostile.pattern[:-1] + _SURROGATE.pattern[1:]) for hostile in (HOSTILE_IN_KEYS,
                                                                                               HOSTILE_IN_VALUES)}
# YAML's one-letter escapes in double-quoted scalars, and what each stands for.
_SHORT_ESCAPES = {"\\0": "\0", "\\a": "\a", "\\b": "\b", "\\t": "\t", "\\n": "\n", "\\v": "\v",
                  "\\f": "\f", "\\r": "\r", "\\e": "\x1b", "\\N": "\x85", "\\L": "\u2028", "\\P": "\u2029"}


class _Builder:
    """Walks the node tree once, recording positions as it builds plain values."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.raw = text  # the file's text, to find an escape in a scalar as written
        self.lines = text.splitlines()
        self.constructor = SafeConstructor()
        self.values: dict[NodePath, Position] = {}
        self.keys: dict[NodePath, Position] = {}
        self.texts: dict[NodePath, _Text] = {}
        self.plain: dict[NodePath, str] = {}
        self.problems: list[Problem] = []
        self.open: set[int] = set()  # the collections being built, to refuse an alias to an ancestor
        self.built = 0  # values built so far, keys and each copy of an alias included, as _BoundedLoader counts


    def value(self, node: yaml.Node, path: NodePath) -> Any:
        self.built += 1
        if self.built > MAX_VALUES or len(path) >= MAX_DEPTH:
            raise _PastBounds(node.start_mark)
        mark = node.start_mark
        self.values[path] = (mark.line + 1, mark.column + 1)
        if not isinstance(node, yaml.ScalarNode):  # a mapping or a sequence, PyYAML's other nodes
            if id(node) in self.open:
                problem = Problem(_mark_source(self.path, mark), "a YAML alias refers back to this node from inside it")
                self.problems.append(problem)
                return None
            self.open.add(id(node))
            built: dict[str, Any] | list[Any] = (self.mapping(node, path) if isinstance(node, yaml.MappingNode)
                                                  else self.sequence(node, path))  # type: ignore[arg-type]
            self.open.discard(id(node))
            return built
        if node.tag == _STR_TAG:  # most scalars are text: what the constructor would build, without its bookkeeping
            text = self.characters(node, node.value, HOSTILE_IN_VALUES)
            if len(path) == 1:  # a top-level text (a view's sql), whose inside a message may point into
                self.texts[path] = self.text(node, text)
            return text
        try:
            value = self.constructor.construct_object(node)
        except (yaml.YAMLError, ValueError) as error:
            # A constructor's ValueError speaks Python (``invalid literal for int() with base 10``).
            reason = error.problem if isinstance(error, yaml.MarkedYAMLError) else (
                f"it is not what its tag {node.tag.replace('tag:yaml.org,2002:', '!!')} says: remove the tag or fix "
                "the value")
            self.problems.append(Problem(_mark_source(self.path, mark), f"cannot read this value: {reason}"))
            return None
        if not node.style and not isinstance(value, str):  # plain: PyYAML's composer says None, libyaml's ""
            self.plain[path] = node.value
        if isinstance(value, str):  # a tag other than !!str that builds text
            text = self.characters(node, value, HOSTILE_IN_VALUES)
            if len(path) == 1:
                self.texts[path] = self.text(node, text)
            return text
        return value

    def sequence(self, node: yaml.SequenceNode, path: NodePath) -> list[Any]:
        return [self.value(item, path + (i,)) for i, item in enumerate(node.value)]

    def mapping(self, node: yaml.MappingNode, path: NodePath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        plain_keys: dict[str, str] = {}  # each key's NFKC form -> the first key written so
        for key_node, value_node in node.value:
            self.built += 1
            mark = key_node.start_mark
            if not isinstance(key_node, yaml.ScalarNode):
                problem = Problem(_mark_source(self.path, mark), "a key must be a plain name, not a list or mapping")
                self.problems.append(problem)
                continue
            found = len(self.problems)
            key = self.characters(key_node, key_node.value, HOSTILE_IN_KEYS)
            if len(self.problems) == found and not key.isascii():
                self.unreadable_key(key_node, key, path, plain_keys)
            plain_keys.setdefault(plain(key), key)
            if key in result:
                first_line = self.keys[path + (key,)][0]
                self.problems.append(Problem(_mark_source(self.path, mark),
                                             f"duplicate key '{key}' (first set on line {first_line})"))
                continue
            self.keys[path + (key,)] = (mark.line + 1, mark.column + 1)
            result[key] = self.value(value_node, path + (key,))
        return result

    def characters(self, node: yaml.ScalarNode, value: str, hostile: re.Pattern[str]) -> str:
        """``value`` with each surrogate pair escaped as two halves (``"\\ud83d\\ude00"``, as JSON
        writes one character) joined into its character; a half left alone is a problem at its escape,
        and so is the first ``hostile`` character (see ``output_safety``)."""
        if not _SUSPECT[hostile].search(value):
            return value  # the common case: nothing hostile, nothing to join
        found = hostile.search(value)
        if found:
            self.problems.append(self.hostile(node, found.group(), hostile is HOSTILE_IN_KEYS))
        if not _SURROGATE.search(value):
            return value  # nothing to join (the round trip below is not free)
        joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        lone = _SURROGATE.search(joined)
        if lone:
            code = f"{ord(lone.group()):04x}"
            raw = self.raw[node.start_mark.index:node.end_mark.index]
            escape = re.search(_SURROGATE_ESCAPE + code, raw, re.IGNORECASE)
            where = (_offset_source(self.path, self.raw, node.start_mark.index + escape.start()) if escape
                     else _mark_source(self.path, node.start_mark))
            message = (f"\\u{code} is half of a UTF-16 surrogate pair, not a character, and no file or metastore "
                       "can store it alone: write the character itself, or escape its code point as \\UXXXXXXXX")
            self.problems.append(Problem(where, message))
        return joined

    def unreadable_key(self, node: yaml.ScalarNode, key: str, path: NodePath, plain_keys: dict[str, str]) -> None:
        """A problem for the key ``key`` (not ASCII, no hostile character) that does not read as what it is: a
        character a key may not hold, letters of two scripts that look alike, not in NFKC (the same key as one
        of ``plain_keys`` then), or a whole-script look-alike of ASCII text (``spec.keys``)."""
        where = _mark_source(self.path, node.start_mark)
        form = plain(key)
        if (character := unlisted(key)) is not None:
            self.problems.append(self.at_character(node, character, UNLISTED))
        elif scripts := mixed_scripts(key):
            self.problems.append(Problem(where, (
                f"the key '{key}' mixes {' and '.join(s.title() for s in scripts)} letters, which look alike: a "
                "reader sees another key than the one stored; write it in one script")))
        elif form in plain_keys and plain_keys[form] != key:
            first_line = self.keys[path + (plain_keys[form],)][0]
            self.problems.append(Problem(where, (
                f"the key '{key}' is '{form}' in its normal form (NFKC), the key '{plain_keys[form]}' on line "
                f"{first_line} is too: keys are compared so, and these two are one key written twice; keep one")))
        elif form != key:
            self.problems.append(Problem(where, not_plain(key, form)))
        elif (reading := passes_for_ascii(key)) is not None:
            self.problems.append(Problem(where, look_alike(key, reading)))

    def hostile(self, node: yaml.ScalarNode, character: str, key: bool) -> Problem:
        """A problem at ``character`` in ``node``'s text as written: the character itself, else its escape."""
        what = "a key, which is one line of plain text" if key else "a value"
        return self.at_character(node, character, f"may not be in {what}: it could change what a terminal, a CI "
                                                   "log or a review shows; remove it")

    def at_character(self, node: yaml.ScalarNode, character: str, reason: str) -> Problem:
        """The problem that ``character`` in ``node`` ``reason`` (``may not be ...``), at the character as written
        (itself, else its escape), named by its escape and its name."""
        raw = self.raw[node.start_mark.index:node.end_mark.index]
        code = ord(character)
        escapes = [re.escape(character), rf"(?i:\\x{code:02x}|\\u{code:04x}|\\U{code:08x})"]
        escapes += [re.escape(short) for short, meant in _SHORT_ESCAPES.items() if meant == character]
        written = re.search("|".join(escapes), raw)
        where = (_offset_source(self.path, self.raw, node.start_mark.index + written.start()) if written
                 else _mark_source(self.path, node.start_mark))
        return Problem(where, f"{escape_character(character)} ({character_name(character)}) {reason}")

    def text(self, node: yaml.ScalarNode, value: str) -> _Text:
        start, end = node.start_mark, node.end_mark
        if node.style != "|":
            return _Text(node.style or None, start.line == end.line, 0, 0)
        content_line = start.line + 2  # block content starts on the line after the indicator
        return _Text(node.style, False, content_line, self.indent(content_line, value))

    def indent(self, content_line: int, value: str) -> int:
        """How many characters of each file line precede a literal block's content."""
        for offset, text in enumerate(value.splitlines()):
            if text.strip() and content_line + offset <= len(self.lines):
                return len(self.lines[content_line + offset - 1]) - len(text)
        return 0
