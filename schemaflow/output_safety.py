"""What text a user wrote may not do on its way out: forge a terminal, a CI log or a review.

Names, comments, properties and view SQL reach a terminal, the CI job's log and the pull-request
comment. The files are checked first (``spec.yamlpos`` refuses the characters below at their
position); the live metastore can still hold anything, so what schemaflow prints is made safe too:

- ``HOSTILE``: characters that steer a terminal or hide text (ESC and every other control
  character but tab and newline, bidirectional overrides and isolates, zero-width characters,
  Unicode's line and paragraph separators). ``terminal_text`` shows each as its escape (``\\x1b``).
- A log line whose text starts with ``::`` is a workflow command to GitHub's runner (it can set
  outputs, mask or unmask, stop commands), and so is ``##[`` anywhere in a line (the runner's older
  form, ``##[add-mask]``, ``##[error]``). ``GuardedStream`` wraps the command's standard output and
  error: a line that would start with ``::`` gets a backslash before it, ``##[`` becomes ``##\\[``,
  and a control character that is not one of schemaflow's own colours (the few SGR sequences its
  painter writes: no other, so nothing can conceal or blink text) is escaped, wherever it came from.

A reader that goes away (``| head``, ``| grep -q``) ends the output, not the command: what is left to
print goes nowhere, and an apply halfway through its steps finishes them and exits with its own code.
"""
from __future__ import annotations

import os
import re
import unicodedata
from typing import Any, TextIO

# Zero-width and invisible formatting characters, and the bidirectional controls.
_INVISIBLE = "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u061c\ufeff"
# Unicode's Default_Ignorable_Code_Point: what a renderer shows as nothing when it cannot show it (a soft
# hyphen, variation selectors, the Hangul fillers, the tag characters). The ranges of
# DerivedCoreProperties.txt of Unicode 15.0.0 (https://www.unicode.org/Public/15.0.0/ucd/), the same code
# points in 14.0.0 and 15.1.0, the Unicode of Pythons 3.11 to 3.13 (tests/test_text_boundary.py checks them
# against the property's definition and the running Python's unicodedata, which lacks the property).
DEFAULT_IGNORABLE = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                     "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
                     "\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
HOSTILE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_INVISIBLE}]")
# What a mapping key or a name may not hold: the same, tab and newline too, and every default-ignorable
# character (shown as nothing, a key holding one reads as another key).
HOSTILE_IN_KEYS = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_INVISIBLE}{DEFAULT_IGNORABLE}]")
# What a value may not hold: characters that steer a terminal or hide text. Other control characters
# are data (Hive's delimiters are \x01 to \x03, a comment may have a CR), shown escaped.
HOSTILE_IN_VALUES = re.compile(f"[\x1b\x7f-\x9f\u2028\u2029{_INVISIBLE}]")
# Colours schemaflow itself paints on a terminal (SGR: reset, red, bold red, green, yellow; see
# ``render.text``), the only escape sequences it writes.
_OURS_OR_HOSTILE = re.compile(f"\x1b\\[(?:0|31|31;1|32|33)m|{HOSTILE.pattern}")
# The runner's older form of a workflow command, read anywhere in a line.
_LEGACY_COMMAND = "##["


# Unicode gives control characters no names; these are the ones people know by one.
_CONTROL_NAMES = {"\t": "TAB", "\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\x1b": "ESCAPE", "\x00": "NUL"}
# What the characters without a name are, by general category.
_UNNAMED = {"Cn": "an unassigned code point", "Co": "a private-use character", "Cs": "a surrogate"}


def character_name(character: str) -> str:
    """``RIGHT-TO-LEFT OVERRIDE``, ``CARRIAGE RETURN``; for what has no name, what it is ("a control character")."""
    return (_CONTROL_NAMES.get(character, "") or unicodedata.name(character, "")
            or _UNNAMED.get(unicodedata.category(character), "a control character"))


def escape_character(character: str) -> str:
    """``\\x1b``, ``\\u202e``, ``\\U000e0041``: how a hostile character is shown, and named in messages."""
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_text(text: str) -> str:
    """``text`` with each hostile character shown as its escape (a tab and a newline stay)."""
    return HOSTILE.sub(lambda found: escape_character(found.group()), text)


def one_line(text: str) -> str:
    """``text`` as one line: each hostile character, a tab and a newline shown as its escape. For what is one
    line on its way out (a step's summary, a hazard, a history entry), where a newline from the metastore
    would start a line of its own making ("# ✅ No changes")."""
    return HOSTILE_IN_KEYS.sub(lambda found: escape_character(found.group()), text)


# Scripts whose letters Latin letters look like (``о`` and ``o``, ``а`` and ``a``, ``ο`` and ``o``).
_LOOK_ALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"})


def mixed_scripts(text: str) -> tuple[str, ...]:
    """The scripts, two or more, whose look-alike letters ``text`` mixes (``оwner``: Cyrillic and Latin);
    () for text in one script, or in scripts that are not mistaken for each other."""
    if text.isascii():
        return ()
    scripts = {unicodedata.name(character, "").split(" ")[0] for character in text if character.isalpha()}
    found = scripts & _LOOK_ALIKE_SCRIPTS
    return tuple(sorted(found)) if len(found) > 1 else ()


class GuardedStream:
    """A text stream that writes through to ``stream`` with no workflow command and no foreign escape."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.line_start = True  # nothing but white space written on the current line yet

    def write(self, text: str) -> int:
        safe = _OURS_OR_HOSTILE.sub(lambda m: m.group() if m.group().startswith("\x1b[") else
                                    escape_character(m.group()), text).replace(_LEGACY_COMMAND, "##\\[")
        parts = safe.split("\n")
        for number, part in enumerate(parts):
            at_start = self.line_start if number == 0 else True
            if at_start:
                content = part.lstrip()
                if content.startswith("::") or content == ":":  # a lone ":" could meet the next write's
                    parts[number] = part[:len(part) - len(content)] + "\\" + content
                at_start = not content
            self.line_start = at_start
        try:
            self.stream.write("\n".join(parts))
        except BrokenPipeError:
            self._reader_gone()
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        """Send the rest, and what the stream holds unwritten, to the null device: no later write or flush
        (Python's own at exit included) fails or reports the pipe."""
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self.stream.fileno())
        finally:
            os.close(null)

    def isatty(self) -> bool:
        return self.stream.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, buffer...: the wrapped stream's
        return getattr(self.stream, name)
