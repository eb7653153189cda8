"""What a key a user writes may hold, so that the key a reviewer reads is the key the metastore or a setting gets.

Every key of a project's files (a property's, an option's, a database's in the settings) is checked where it is
written (``spec.yamlpos``); an ASCII key needs nothing more than ``output_safety``'s rule. Another key is:

- made of what the allow-list names: letters, marks, digits, punctuation, symbols and the space (Unicode's
  general categories L, M, N, P and S), no default-ignorable character among them (``output_safety``: they
  show as nothing). Format and private-use characters, unassigned code points and the other spaces are refused;
- compared in its normal form, NFKC: a key that is not in it (``ｓａｌｅｓ`` in FULLWIDTH letters,
  ``𝐬𝐚𝐥𝐞𝐬`` in MATHEMATICAL ones) is refused, and its NFKC form (``sales``) is what to write instead;
  two keys of a mapping equal after NFKC are one key written twice;
- not a whole-script look-alike of ASCII text: a key whose every character (marks aside) is ASCII or one that
  Unicode's confusables data (UTS #39) says looks like ASCII text, and that holds one of the latter
  (``ѕаӏеѕ``, all Cyrillic), passes for an ASCII key it is not, and is refused. A word of a script of its own
  (``данные``, ``цена``, ``名前``, ``café``) holds letters that pass for no ASCII one, and stays accepted.

The look-alikes are a table of our own (``ascii_lookalikes.txt``), lines of confusables.txt: the rule needs
one question answered (does this key pass for ASCII text?), which a few hundred lines answer, read once, with
no dependency to install in the job that plans a pull request.
"""
from __future__ import annotations

import re
import unicodedata
from functools import cache
from importlib import resources

# The general categories a key's characters may have: letters, marks, numbers, punctuation, symbols.
_ALLOWED = frozenset("LMNPS")
_MARKS = frozenset({"Mn", "Me"})  # marks that take no room of their own
# A mapping of confusables.txt: source ; prototype (code points in hex) ; MA.
_LINE = re.compile(r"([0-9A-F]+) ;\t([0-9A-F ]+) ;\tMA\t")
_NAMED = 3  # look-alike characters a message names
# Why a character ``unlisted`` finds may not be in a key (after its escape and name), and what to do.
UNLISTED = ("may not be in a key, which holds letters, marks, digits, punctuation, symbols and plain spaces: a reader "
            "may not see it as it is stored; remove it")


def unlisted(key: str) -> str | None:
    """The first character of ``key`` that a key may not hold (the allow-list above), None if none."""
    return next((c for c in key if c != " " and unicodedata.category(c)[0] not in _ALLOWED), None)


def plain(key: str) -> str:
    """``key`` in the form keys are compared in: NFKC."""
    return key if key.isascii() else unicodedata.normalize("NFKC", key)


def not_plain(key: str, form: str) -> str:
    """The refusal of ``key``, whose NFKC form ``form`` differs."""
    changed = [c for c in dict.fromkeys(key) if unicodedata.normalize("NFKC", c) != c]
    return (f"the key '{key}' is not in its normal form (NFKC): {_names(changed)} read as '{form}', the key it is "
            f"compared as, where the metastore would get another; write '{form}'")


def passes_for_ascii(key: str) -> str | None:
    """The ASCII text ``key`` passes for, when it is not ASCII and every character of it (marks aside) is ASCII
    or looks like ASCII text (UTS #39's confusables); None otherwise. ``key`` is in NFKC."""
    read, look_alikes = [], False
    for character in unicodedata.normalize("NFD", key):
        if character.isascii() or unicodedata.category(character) in _MARKS:
            read.append(character)
        elif (ascii_text := _reads_as().get(character)) is not None:
            read.append(ascii_text)
            look_alikes = True
        else:
            return None
    return unicodedata.normalize("NFC", "".join(read)) if look_alikes else None


def look_alike(key: str, reading: str) -> str:
    """The refusal of ``key``, which passes for the ASCII text ``reading``."""
    found = [c for c in dict.fromkeys(unicodedata.normalize("NFD", key)) if c in _reads_as()]
    return (f"the key '{key}' passes for an ASCII key ('{reading}', as Unicode's confusables data reads it): "
            f"{_names(found)} look like ASCII characters, so a reviewer reads one key where the metastore gets "
            "another; write the key in ASCII letters, or in letters that pass for none")


def _names(characters: list[str]) -> str:
    named = [f"U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip() for c in characters[:_NAMED]]
    return ", ".join(named) + (", ..." if len(characters) > _NAMED else "")


@cache
def _reads_as() -> dict[str, str]:
    """Each character that passes for ASCII text, with that text (the first it reads as, a letter for itself)."""
    prototypes = {}
    for line in resources.files(__package__).joinpath("ascii_lookalikes.txt").read_text("utf-8").split("\n"):
        if found := _LINE.match(line):
            prototypes[chr(int(found[1], 16))] = "".join(chr(int(code, 16)) for code in found[2].split())
    # The skeleton of each printable ASCII character, and the character a skeleton reads as (itself first).
    reads: dict[str, str] = {}
    for ascii_character in map(chr, range(0x20, 0x7F)):
        skeleton = prototypes.get(ascii_character, ascii_character)
        if skeleton not in reads or skeleton == ascii_character:
            reads[skeleton] = ascii_character
    return {character: text for character, prototype in prototypes.items() if not character.isascii()
            if (text := _ascii_text(prototype, reads)) is not None}


def _ascii_text(prototype: str, reads: dict[str, str]) -> str | None:
    """The ASCII text whose skeleton is ``prototype``: it cut into skeletons of ASCII characters; None if none."""
    texts: dict[int, str] = {0: ""}  # how much of the prototype is read -> the text that reads it
    for start in range(len(prototype)):
        if start in texts:
            for end in range(start + 1, len(prototype) + 1):
                if prototype[start:end] in reads:
                    texts.setdefault(end, texts[start] + reads[prototype[start:end]])
    return texts.get(len(prototype))
