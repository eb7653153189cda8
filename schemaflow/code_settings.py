"""Settings that run code, and the operator's approval of them.

``schemaflow.yaml`` is in the repository: whoever gets a pull request merged writes it. Some of its
settings run code of their choosing in the process that applies, where the production metastore's
credentials are at hand: an ``after_apply`` hook is a shell command, and a Spark setting can make Spark
load a class or a jar, run a script, or send the job's data, logs or credentials elsewhere; and a function
the project declares for its views to call (``functions:``, its class and the jars fetched for it) runs
wherever a view calls it. Each is a ``CodeSetting`` with an id, and none of them runs unless the operator approved that id outside the
repository: ``SCHEMAFLOW_APPROVED_CODE`` in the job's environment (a protected environment's variable in
CI) or ``--approve-code`` on the command line.

Which Spark settings need the operator is decided by an allow-list (``safe_spark_settings``): a key
schemaflow knows to be safe for data and configuration, with a value of the shape it takes, is a plain
setting; every other key, and a known key with a value of another shape, needs the operator's id.

An id is a 128-bit digest of the setting, its exact value and the content of every file of the project
folder (the folder of schemaflow.yaml) but its declarations (``spec.code_files``): a changed command,
value or file has another id, so an approval never carries over to code nobody approved. Not only the
files a command names: ``python3 -m tools.notify`` runs ``tools/__init__.py`` and whatever the project
folder holds under the name of a module it imports (Python puts that folder first on ``sys.path``), a
``make`` reads its Makefile, a script sources others, a glob matches files added later. Which of them
a command reads cannot be known from its words, so the approval covers them all, and code settings may
name no file outside the project folder (``CodePaths``): a path that is absolute, leads out of the
folder (``../``), starts with ``~`` or is built as the code runs (``$VAR``, ``${...}``, backticks,
``$(...)``) is refused where it is written, unless it is absolute and below a folder the operator
supplies code from (``SCHEMAFLOW_CODE_PATHS``) or the system's (``SYSTEM_FOLDERS``), outside the
repository's checkout. It is what a hook's sandbox lets it see: the project folder, read-only, and those
folders, and nothing else of the repository.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from itertools import pairwise
from typing import Any
from collections.abc import Collection, Iterable, Mapping, Sequence

from schemaflow.errors import SchemaflowError
from schemaflow.safe_spark_settings import SAFE

APPROVAL_VARIABLE = "SCHEMAFLOW_APPROVED_CODE"
# Folders the operator supplies code from, outside the repository (absolute, separated by ':'): code settings may
# name paths below them, and a hook sees them, read-only.
OPERATOR_PATHS_VARIABLE = "SCHEMAFLOW_CODE_PATHS"
# The machine's installed software: no pull request writes there, so code settings may name paths below them and a
# hook sees them, read-only.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
HOOKS = "after_apply"
SPARK_CONF = "spark.conf"
FUNCTIONS = "functions"
# The files of the project folder code settings can run, each with its content's git blob id (``spec.code_files``).
CODE_FILES = "code_files"
_ID_LENGTH = 32  # hex digits: 128 bits, beyond any collision search


@dataclass(frozen=True)
class CodeSetting:
    """One setting that runs code: ``setting`` is ``after_apply`` or ``spark.conf <key>``."""

    setting: str
    value: str
    reason: str
    files: tuple[tuple[str, str], ...] = ()  # the project folder's files it can run: (path, id of the content)

    @property
    def id(self) -> str:
        """What the operator approves: a digest of the setting, its exact value and the files' contents."""
        covered = "".join(f"\0{path}\0{content}" for path, content in self.files)
        return hashlib.sha256(f"{self.setting}\0{self.value}{covered}".encode()).hexdigest()[:_ID_LENGTH]

    def describe(self) -> str:
        count = len(self.files)
        files = (f"; with the {count} file{'' if count == 1 else 's'} of the project folder but its declarations, as "
                 f"{'it is' if count == 1 else 'they are'} now") if count else ""
        return f"{self.setting}: {self.value!r} ({self.reason}{files}; id {self.id})"


def spark_code_reason(key: str, value: str) -> str | None:
    """Why the Spark setting ``key: value`` needs the operator's approval, or None for a setting schemaflow knows to
    be safe for data and configuration, with a value of the shape it takes (``safe_spark_settings``)."""
    shape = SAFE.get(key)
    if shape is None:
        return ("not a Spark setting schemaflow knows to be safe: it may load code, or send data, logs or "
                "credentials elsewhere")
    if not shape.admits(value):
        return f"not a value schemaflow knows to be safe for this setting, which takes {shape.words}"
    return None


def code_settings(hooks: Sequence[str], spark_conf: Mapping[str, str],
                  files: Mapping[str, str] | None = None) -> tuple[CodeSetting, ...]:
    """The hooks and Spark settings among these that run code, in a stable order, each covering ``files`` (the
    project folder's files but its declarations, path -> id of the content)."""
    covered = tuple(sorted((files or {}).items()))
    found = [CodeSetting(HOOKS, command, "a shell command run after apply", covered) for command in hooks]
    found += [CodeSetting(f"{SPARK_CONF} {key}", value, reason, covered)
              for key, value in sorted(spark_conf.items()) for reason in [spark_code_reason(key, value)] if reason]
    return tuple(found)


def function_settings(functions: Mapping[str, Mapping[str, Any]],
                      files: Mapping[str, str] | None = None) -> tuple[CodeSetting, ...]:
    """The functions a project declares for its views to call (``functions:``), each a setting that runs code: its
    id covers its name, its class, its resources and ``files``, as every code setting's does, in the order declared."""
    covered = tuple(sorted((files or {}).items()))
    found = []
    for name, declared in functions.items():
        resources = [f"{kind} {uri}" for resource in declared.get("resources") or () for kind, uri in resource.items()]
        value = f"class {declared['class']}" + (f" using {', '.join(resources)}" if resources else "")
        found.append(CodeSetting(f"{FUNCTIONS} {name.lower()}", value, "a function the project's views call without approval "
                                 "each: Spark loads the class, and fetches the resources, the metastore names for it",
                                 covered))
    return tuple(found)


def declared_code(settings: Mapping[str, Any], files: Mapping[str, str] | None = None) -> tuple[CodeSetting, ...]:
    """The settings that run code in a settings file's data, the project's and every target's, once each."""
    found: dict[str, CodeSetting] = {}
    for part in [settings, *(target or {} for target in (settings.get("targets") or {}).values())]:
        conf = {str(k): str(v) for k, v in ((part.get("spark") or {}).get("conf") or {}).items()}
        for setting in code_settings([str(c) for c in part.get(HOOKS) or ()], conf, files):
            found.setdefault(setting.id, setting)
    for setting in function_settings(settings.get(FUNCTIONS) or {}, files):
        found.setdefault(setting.id, setting)
    return tuple(found.values())


# Stand-ins for the shell's "$" and "`" where they expand (outside single quotes, not escaped), while the
# command's words are split: a path built from them is known to be built.
_DOLLAR, _BACKTICK = "\0", "\1"
# A remote address: not a path of this machine (file: and local: are, and name it after the "://").
_ADDRESS = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^\s,;'\"|<>()]*)")
_LOCAL_SCHEMES = ("file", "local")
# Where a word's parts are separated: lists, class paths, options (-javaagent:x.jar=opts, --config=x, @file).
_SEPARATORS = " \t\n\r\f\v,:;=@\"'()<>|&"
_PATH_SEPARATORS = re.compile(f"[{re.escape(_SEPARATORS)}]+")
# An expansion in braces (Spark's ${env:X}, the shell's ${X:-y}) is one part, whatever separators it holds: they
# are set aside as characters of Unicode's private use while the word is split.
_BRACED = re.compile(f"{_DOLLAR}\\{{[^}}]*\\}}")
_SET_ASIDE = {ord(char): 0xF0000 + ord(char) for char in _SEPARATORS}
_RESTORED = {aside: char for char, aside in _SET_ASIDE.items()} | {ord(_DOLLAR): "$", ord(_BACKTICK): "`"}
# The shell's redirections of output: the word after one is written, not run (> log, 2>> err, &> all, 2>&1).
_OUTPUT = frozenset({">", ">>", ">|", ">&", "&>", "&>>"})


@dataclass(frozen=True)
class NamedPath:
    """A path a code setting's value names: ``text`` as written, ``built`` when the shell or Spark builds it from
    an expansion as the code runs."""

    text: str
    built: bool


def named_paths(value: str, command: bool = False) -> tuple[NamedPath, ...]:
    """The paths a code setting's value names: each part of its words (of a shell ``command``, or of a Spark
    value) between the separators of lists, class paths and options that holds a ``/``, is ``..`` or starts with
    ``~``; a remote address (``https://...``) is none, a local one (``file:/x``, ``local:/x``) its path. What a
    command writes to (``> out``) is no code it runs and is left out."""
    words = _shell_words(value) if command else [value.replace("$", _DOLLAR).replace("`", _BACKTICK)]
    found: dict[str, NamedPath] = {}
    for word in words:
        word = _BRACED.sub(lambda braced: braced.group().translate(_SET_ASIDE), _ADDRESS.sub(_local_path, word))
        for part in _PATH_SEPARATORS.split(word):
            if "/" in part or part == ".." or part.startswith("~"):
                text = part.translate(_RESTORED)
                found.setdefault(text, NamedPath(text, _DOLLAR in part or _BACKTICK in part))
    return tuple(found.values())


def _shell_words(command: str) -> list[str]:
    """The words of a shell command, its operators (``;``, ``|``, ``>``, ...) apart and the targets of output
    redirections left out, with each ``$`` and backtick that expands marked (``_DOLLAR``, ``_BACKTICK``)."""
    marked, quote, escaped = [], "", False
    for char in command:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        elif char in "$`" and quote != "'":
            char = _DOLLAR if char == "$" else _BACKTICK
        marked.append(char)
    lexer = shlex.shlex("".join(marked), posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: the shell refuses it too; the words as written are still read
        tokens = "".join(marked).split()
    return [token for previous, token in pairwise(["", *tokens]) if previous not in _OUTPUT]


def _local_path(address: re.Match[str]) -> str:
    """A remote address as nothing, a local one (``file://...``) as its path."""
    if address.group(1).lower() not in _LOCAL_SCHEMES:
        return " "
    rest = address.group(2)
    return rest if rest.startswith("/") else "/" + rest.partition("/")[2]  # file://host/x: the path /x


@dataclass(frozen=True)
class CodePaths:
    """Where code settings may name files outside the project folder: below the system's folders or the
    ``operator``'s (``SCHEMAFLOW_CODE_PATHS``; None where they are not known, as in a pull request's job, which
    then refuses no absolute path for want of them), and never in the repository's ``checkout``."""

    checkout: str | None = None
    operator: tuple[str, ...] | None = ()

    def refusal(self, path: NamedPath) -> str | None:
        """Why a code setting may not name ``path``, or None."""
        if path.built:
            return "a path built as the code runs, so that nobody can review what it names"
        if path.text.startswith("~"):
            return "a path in a home folder"
        normal = posixpath.normpath(path.text)
        if not normal.startswith("/"):
            return "a path that leads out of the project folder" if normal.split("/")[0] == ".." else None
        if self.checkout is not None and any(_below(p, self.checkout) for p in (normal, os.path.realpath(normal))):
            return "a path into the repository's checkout, whose files outside the project folder no approval covers"
        if self.operator is None or any(_below(normal, folder) for folder in (*SYSTEM_FOLDERS, *self.operator)):
            return None
        return "a path outside the project folder, below none of the folders the operator supplies code from"


def _below(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def operator_paths(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The folders ``SCHEMAFLOW_CODE_PATHS`` names, normalised; relative entries are no folder the operator could
    mean and are left out."""
    return tuple(sorted({posixpath.normpath(entry) for entry in environ.get(OPERATOR_PATHS_VARIABLE, "").split(":")
                         if entry.startswith("/")}))


def approvals(variable: str | None, given: Iterable[str] = ()) -> frozenset[str]:
    """The approved ids: ``SCHEMAFLOW_APPROVED_CODE`` (separated by spaces or commas) and ``--approve-code``'s."""
    return frozenset(word for text in [variable or "", *given] for word in re.split(r"[\s,]+", text) if word)


def unapproved(found: Iterable[CodeSetting], approved: Collection[str]) -> tuple[CodeSetting, ...]:
    return tuple(setting for setting in found if setting.id not in approved)


def check_approved(found: Iterable[CodeSetting], approved: Collection[str], doing: str,
                   holder: str = "schemaflow.yaml has settings") -> None:
    """Refuse to go on while any of ``found`` is not approved; the message lists each with its id."""
    missing = unapproved(found, approved)
    if not missing:
        return
    listed = "\n".join(f"  {setting.describe()}" for setting in missing)
    ids = " ".join(setting.id for setting in missing)
    raise SchemaflowError(
        f"{holder} that run code {doing}, and the operator has not approved them; nothing was "
        f"run:\n{listed}\nRead each one. To approve them, set {APPROVAL_VARIABLE}='{ids}' where the job runs (in CI, "
        "a variable of the protected environment, not a file of the repository), or pass --approve-code for each id")
