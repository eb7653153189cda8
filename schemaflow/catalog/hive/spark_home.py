"""Where Spark is installed: the operator's ``SPARK_HOME``, else pyspark's own folder; never a folder found from the
one schemaflow runs in.

With ``SPARK_HOME`` unset (pip's pyspark), pyspark looks for Spark in ``../`` of the current folder first
(``find_spark_home``) and runs the ``bin/spark-submit`` it finds there, with the job's whole environment: the folder
above a project (its repository, for a project in a subfolder, or the project itself, run from ``schemas/``) could
hold one that a pull request committed. An empty ``SPARK_HOME`` is worse: pyspark runs ``./bin/spark-submit``, the
project's. So schemaflow chooses the folder itself and sets ``SPARK_HOME`` to it before pyspark looks
(``pin_spark_home``), and reads the site's configuration (``spark-defaults.conf``) from the same installation
(``conf_dir``).

Spark's scripts and launcher take more folders from the environment (its configuration, Java, Hadoop's and YARN's
configuration, extra class path entries), and run in the project's folder (``catalog.hive.session``): a relative one would
be the project's files, code a pull request writes. Each must be absolute, or is refused before Spark starts. So
is the ``java`` they run: without ``JAVA_HOME`` Spark's scripts run the first ``java`` on the ``PATH``, where an empty
or relative entry is the project's folder; schemaflow looks on the absolute entries alone and sets ``JAVA_HOME`` to
the installation it found.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path

from schemaflow.errors import SchemaflowError
from schemaflow.spark_version import INSTALL

SPARK_HOME = "SPARK_HOME"
SPARK_CONF_DIR = "SPARK_CONF_DIR"
JAVA_HOME = "JAVA_HOME"
# What Spark's scripts and launcher take from the environment as folders (the last, entries separated by ':'):
# its installation and configuration, the java it runs, and what it adds to the driver's class path.
LAUNCH_PATHS = (SPARK_HOME, SPARK_CONF_DIR, JAVA_HOME, "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH")


def pyspark_folder() -> Path | None:
    """The installed pyspark's package folder (its ``bin/``, ``jars/``, ``conf/``), found without importing it."""
    spec = find_spec("pyspark")
    return Path(spec.origin).parent if spec is not None and spec.origin is not None else None


def spark_home(env: Mapping[str, str] | None = None) -> Path | None:
    """The Spark installation schemaflow runs: the operator's ``SPARK_HOME`` in ``env`` (default: this process's
    environment) where it is set and not empty, else pyspark's own folder (None: neither)."""
    env = os.environ if env is None else env
    _check_absolute(env, SPARK_HOME)
    return Path(env[SPARK_HOME]) if env.get(SPARK_HOME) else pyspark_folder()


def conf_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The folder of the Spark configuration Spark's scripts read: ``SPARK_CONF_DIR``, else the installation's
    ``conf/``."""
    env = os.environ if env is None else env
    _check_absolute(env, SPARK_CONF_DIR)
    if env.get(SPARK_CONF_DIR):
        return Path(env[SPARK_CONF_DIR])
    home = spark_home(env)
    return home / "conf" if home is not None else None


def java(env: Mapping[str, str] | None = None) -> Path | None:
    """The ``java`` Spark's scripts run, and schemaflow's own JVMs: ``$JAVA_HOME/bin/java``, else the first in an
    absolute folder of the ``PATH`` (None: no ``java`` there)."""
    env = os.environ if env is None else env
    _check_absolute(env, JAVA_HOME)
    if env.get(JAVA_HOME):
        return Path(env[JAVA_HOME]) / "bin" / "java"
    absolute = os.pathsep.join(entry for entry in env.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(entry))
    found = shutil.which("java", path=absolute)
    return Path(found) if found else None


def pin_spark_home() -> Path:
    """Check the folders Spark will take from this process's environment, and set ``SPARK_HOME`` to the
    installation (``spark_home``), so that nothing of pyspark or Spark looks for one; returns it."""
    for name in LAUNCH_PATHS:
        _check_absolute(os.environ, name)
    home = spark_home()
    if home is None:
        raise SchemaflowError(f"Spark needs pyspark, which is not installed here: {INSTALL}, or set "
                              f"{SPARK_HOME} to the folder of a Spark installation")
    if not (home / "bin" / "spark-submit").is_file():
        raise SchemaflowError(f"{home} holds no bin/spark-submit, which starts Spark: set {SPARK_HOME} to the folder "
                              "of a Spark installation; nothing was run")
    os.environ[SPARK_HOME] = str(home)
    runs = java()
    if runs is None or not runs.is_file():  # said first: Spark's own failure would blame its master
        missing = f"{JAVA_HOME} is not set and no java is on the PATH" if runs is None else f"there is no {runs}"
        raise SchemaflowError(f"Spark needs Java, and there is none here ({missing}): install Java 17 (a JDK), or set "
                              f"{JAVA_HOME} to one; nothing was run")
    if not os.environ.get(JAVA_HOME):  # its installation, through the links to it (bin/java)
        os.environ[JAVA_HOME] = str(runs.resolve().parent.parent)
    return home


def _check_absolute(env: Mapping[str, str], name: str) -> None:
    """Refuse a relative path in the environment variable ``name`` (every entry, for a list of them)."""
    relative = [entry for entry in env.get(name, "").split(os.pathsep) if entry and not os.path.isabs(entry)]
    if relative:
        raise SchemaflowError(f"{name} holds the relative path '{relative[0]}': Spark starts in the project's folder "
                              "and would take it from there, from the repository's files; set it to an absolute path "
                              "(each entry, for a list); nothing was run")
