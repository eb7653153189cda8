"""Settings that run code, and the operator's approval of them.

``schemaflow.yaml`` is in the repository: whoever gets a pull request merged writes it. Some of its
settings run code of their choosing in the process that applies, where the production metastore's
credentials are at hand: an ``after_apply`` hook is a shell command, and a JVM option, a class path,
a jar or package, an extension, plugin or listener, or any Spark setting that names a Java class
makes Spark run or load code as it starts; and a function the project declares for its views to call
(``functions:``, its class and the jars fetched for it) runs wherever a view calls it. Each is a ``CodeSetting`` with an id, a 128-bit digest
of the setting, its value and the content of every file of the project it names, and none of them
runs unless the operator approved that id outside the repository: ``SCHEMAFLOW_APPROVED_CODE`` in the
job's environment (a protected environment's variable in CI) or ``--approve-code`` on the command
line. A changed command, value or named file has another id, so an approval never carries over to
code nobody approved: a pull request that rewrites ``scripts/notify.sh`` under an approved
``after_apply: [sh scripts/notify.sh]`` changes what runs, and so the id.

Which files a setting names is read from its words (``named_paths``): each relative path in a
command, a list or a class path (``lib/*`` names the folder's files), and the module after
``python -m``. What a named file reads in turn is not followed: a hook's script that runs other
files of the repository should name them on its command line, or live outside the repository.

Which Spark settings run code is known by key (the ones Spark documents as loading classes, jars
or scripts) and, for the keys Spark, Hadoop and Hive add all the time, by value: a value that names
a Java class (``com.example.Provider``) or a jar, library or script file; and a value Spark or
Hadoop expands (``${env:AWS_SECRET_ACCESS_KEY}`` in an endpoint would send the job's secret wherever
the endpoint points).
"""
from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Any
from collections.abc import Collection, Iterable, Mapping, Sequence

from schemaflow.errors import SchemaflowError

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

# Spark settings that run or load code whatever their value (Spark's configuration reference).
_CODE_KEYS = frozenset({
    "spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions", "spark.executor.extraJavaOptions",
    "spark.executor.defaultJavaOptions", "spark.driver.extraClassPath", "spark.driver.defaultExtraClassPath",
    "spark.executor.extraClassPath", "spark.driver.extraLibraryPath", "spark.executor.extraLibraryPath",
    "spark.jars", "spark.files", "spark.archives", "spark.submit.pyFiles", "spark.pyspark.python",
    "spark.pyspark.driver.python", "spark.sql.extensions", "spark.plugins", "spark.extraListeners",
    "spark.sql.queryExecutionListeners", "spark.sql.streaming.streamingQueryListeners", "spark.ui.filters",
    "spark.sql.hive.metastore.jars", "spark.sql.hive.metastore.jars.path", "spark.sql.hive.metastore.sharedPrefixes",
    "spark.sql.hive.metastore.barrierPrefixes", "spark.serializer", "spark.kryo.registrator",
    "spark.shuffle.manager",
})
# Families of them: jars and packages to fetch, catalogs (a class each), resource discovery scripts,
# and the environment of executors and application masters (LD_PRELOAD runs a library).
_CODE_PREFIXES = ("spark.jars.", "spark.sql.catalog.", "spark.driver.resource.", "spark.executor.resource.",
                  "spark.executorEnv.", "spark.yarn.appMasterEnv.", "spark.kubernetes.driverEnv.",
                  "spark.kubernetes.driver.podTemplate", "spark.kubernetes.executor.podTemplate")
# A fully qualified Java class name (its last part capitalised, as Java's conventions have it).
_JAVA_CLASS = re.compile(r"\s*(?:[A-Za-z_$][\w$]*\.)+[A-Z][\w$]*\s*")
_CODE_FILE = re.compile(r"\.(?:jar|zip|so|dylib|dll|py|sh|class)\s*$", re.IGNORECASE)
# Spark's ConfigReader (${env:X}, ${system:X}) and Hadoop's Configuration (${env.X}, ${X}) expand these.
_EXPANDED = "${"
_ID_LENGTH = 32  # hex digits: 128 bits, beyond any collision search
# Where a setting's value names files: separators of lists, class paths, options (-javaagent:x.jar=opts),
# and the shell's own (sh -c "$(cat x)", a < x, a | b).
_PATH_SEPARATORS = re.compile(r"[\s,:;=\"'()<>|&$`]+")
# A shell redirection of output and its target (> out, >> log, 2> err, &> all, 2>&1).
_OUTPUT = re.compile(r"(?:\d|&)?>>?[|&]?\s*[^\s;|&<>]+")
# The project's files a setting names, each with the digest of its content (``spec.settings.code_files``).
CODE_FILES = "code_files"


@dataclass(frozen=True)
class CodeSetting:
    """One setting that runs code: ``setting`` is ``after_apply`` or ``spark.conf <key>``."""

    setting: str
    value: str
    reason: str
    files: tuple[tuple[str, str], ...] = ()  # the project's files it names: (path, digest of the content)

    @property
    def id(self) -> str:
        """What the operator approves: a digest of the setting, its exact value and its files' contents."""
        named = "".join(f"\0{path}\0{digest}" for path, digest in self.files)
        return hashlib.sha256(f"{self.setting}\0{self.value}{named}".encode()).hexdigest()[:_ID_LENGTH]

    def describe(self) -> str:
        files = f"; runs {', '.join(path for path, _ in self.files)} as it is now" if self.files else ""
        return f"{self.setting}: {self.value!r} ({self.reason}{files}; id {self.id})"


def spark_code_reason(key: str, value: str) -> str | None:
    """Why the Spark setting ``key: value`` runs or loads code, or None when it does not."""
    if key in _CODE_KEYS or key.startswith(_CODE_PREFIXES):
        return "Spark loads or runs what it names"
    if _EXPANDED in value:
        return "Spark or Hadoop fills ${...} in with the job's environment or system properties"
    parts = value.split(",")
    if any(_JAVA_CLASS.fullmatch(part) for part in parts):
        return "names a Java class, which Spark or Hadoop loads"
    if any(_CODE_FILE.search(part) for part in parts):
        return "names a jar, library or script"
    return None


def code_settings(hooks: Sequence[str], spark_conf: Mapping[str, str],
                  files: Mapping[str, str] | None = None) -> tuple[CodeSetting, ...]:
    """The hooks and Spark settings among these that run code, in a stable order, each with those of
    ``files`` (the project's, path -> digest of the content) that it names."""
    files = files or {}
    found = [CodeSetting(HOOKS, command, "a shell command run after apply", _named(named_paths(command, True), files))
             for command in hooks]
    found += [CodeSetting(f"{SPARK_CONF} {key}", value, reason, _named(named_paths(value), files))
              for key, value in sorted(spark_conf.items()) for reason in [spark_code_reason(key, value)] if reason]
    return tuple(found)


def function_settings(functions: Mapping[str, Mapping[str, Any]],
                      files: Mapping[str, str] | None = None) -> tuple[CodeSetting, ...]:
    """The functions a project declares for its views to call (``functions:``), each a setting that runs code: its
    id covers its name, its class and its resources (and those of ``files`` they name), in the order declared."""
    found = []
    for name, declared in functions.items():
        resources = [f"{kind} {uri}" for resource in declared.get("resources") or () for kind, uri in resource.items()]
        value = f"class {declared['class']}" + (f" using {', '.join(resources)}" if resources else "")
        found.append(CodeSetting(f"{FUNCTIONS} {name.lower()}", value, "a function the project's views call without approval "
                                 "each: Spark loads the class, and fetches the resources, the metastore names for it",
                                 _named(named_paths(" ".join(resources)), files or {})))
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


def named_paths(value: str, command: bool = False) -> tuple[str, ...]:
    """The relative paths (project files or folders) a setting's value may name, normalised and sorted:
    every word of a shell ``command`` or of a Spark value, its parts between separators, a class path's
    folder (``lib/*``), and the module after ``python -m`` (``tools/notify.py``, ``tools/notify``)."""
    if command:  # what a command writes (> out, 2>> log) is no code it runs, and may not exist until it ran
        value = _OUTPUT.sub(" ", value)
    try:
        words = shlex.split(value, comments=False) if command else [value]
    except ValueError:  # unbalanced quotes: the shell refuses it too; the words as written are still read
        words = value.split()
    parts = [part for word in words for part in (word, *_PATH_SEPARATORS.split(word)) if part]
    modules = [words[i + 1] for i, word in enumerate(words[:-1]) if command and word == "-m"]
    parts += [candidate for module in modules for base in [module.replace(".", "/")]
              for candidate in (base + ".py", base)]
    found = set()
    for part in parts:
        part = part.removeprefix("file:").removeprefix("local:")
        if part.endswith("*"):
            part = part.rstrip("*") or "."
        normal = posixpath.normpath(part)
        if normal not in (".", "..") and not normal.startswith(("/", "../", "-", "~")) and "://" not in part:
            found.add(normal)
    return tuple(sorted(found))


def _named(paths: Sequence[str], files: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The files among ``files`` that ``paths`` name, the files below a named folder included."""
    return tuple((file, digest) for file, digest in sorted(files.items())
                 if any(file == path or file.startswith(path + "/") for path in paths))


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
