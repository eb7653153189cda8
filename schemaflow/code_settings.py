"""Settings that run code, and the operator's approval of them.

``schemaflow.yaml`` is in the repository: whoever gets a pull request merged writes it. Some of its
settings run code of their choosing in the process that applies, where the production metastore's
credentials are at hand: an ``after_apply`` hook is a shell command, and a JVM option, a class path,
a jar or package, an extension, plugin or listener, or any Spark setting that names a Java class
makes Spark run or load code as it starts. Each is a ``CodeSetting`` with a short id, a digest of
the setting and its value, and none of them runs unless the operator approved that id outside the
repository: ``SCHEMAFLOW_APPROVED_CODE`` in the job's environment (a protected environment's variable
in CI) or ``--approve-code`` on the command line. A changed command or value has another id, so an
approval never carries over to code nobody approved.

Which Spark settings run code is known by key (the ones Spark documents as loading classes, jars
or scripts) and, for the keys Spark, Hadoop and Hive add all the time, by value: a value that names
a Java class (``com.example.Provider``) or a jar, library or script file.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from collections.abc import Collection, Iterable, Mapping, Sequence

from schemaflow.errors import SchemaflowError

APPROVAL_VARIABLE = "SCHEMAFLOW_APPROVED_CODE"
HOOKS = "after_apply"
SPARK_CONF = "spark.conf"

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
_ID_LENGTH = 12


@dataclass(frozen=True)
class CodeSetting:
    """One setting that runs code: ``setting`` is ``after_apply`` or ``spark.conf <key>``."""

    setting: str
    value: str
    reason: str

    @property
    def id(self) -> str:
        """What the operator approves: a digest of the setting and its exact value."""
        return hashlib.sha256(f"{self.setting}\0{self.value}".encode()).hexdigest()[:_ID_LENGTH]

    def describe(self) -> str:
        return f"{self.setting}: {self.value!r} ({self.reason}; id {self.id})"


def spark_code_reason(key: str, value: str) -> str | None:
    """Why the Spark setting ``key: value`` runs or loads code, or None when it does not."""
    if key in _CODE_KEYS or key.startswith(_CODE_PREFIXES):
        return "Spark loads or runs what it names"
    parts = value.split(",")
    if any(_JAVA_CLASS.fullmatch(part) for part in parts):
        return "names a Java class, which Spark or Hadoop loads"
    if any(_CODE_FILE.search(part) for part in parts):
        return "names a jar, library or script"
    return None


def code_settings(hooks: Sequence[str], spark_conf: Mapping[str, str]) -> tuple[CodeSetting, ...]:
    """The hooks and Spark settings among these that run code, in a stable order."""
    found = [CodeSetting(HOOKS, command, "a shell command run after apply") for command in hooks]
    found += [CodeSetting(f"{SPARK_CONF} {key}", value, reason) for key, value in sorted(spark_conf.items())
              for reason in [spark_code_reason(key, value)] if reason]
    return tuple(found)


def approvals(variable: str | None, given: Iterable[str] = ()) -> frozenset[str]:
    """The approved ids: ``SCHEMAFLOW_APPROVED_CODE`` (separated by spaces or commas) and ``--approve-code``'s."""
    return frozenset(word for text in [variable or "", *given] for word in re.split(r"[\s,]+", text) if word)


def unapproved(found: Iterable[CodeSetting], approved: Collection[str]) -> tuple[CodeSetting, ...]:
    return tuple(setting for setting in found if setting.id not in approved)


def check_approved(found: Iterable[CodeSetting], approved: Collection[str], doing: str) -> None:
    """Refuse to go on while any of ``found`` is not approved; the message lists each with its id."""
    missing = unapproved(found, approved)
    if not missing:
        return
    listed = "\n".join(f"  {setting.describe()}" for setting in missing)
    ids = " ".join(setting.id for setting in missing)
    raise SchemaflowError(
        f"schemaflow.yaml has settings that run code {doing}, and the operator has not approved them; nothing was "
        f"run:\n{listed}\nRead each one. To approve them, set {APPROVAL_VARIABLE}='{ids}' where the job runs (in CI, "
        "a variable of the protected environment, not a file of the repository), or pass --approve-code for each id")
