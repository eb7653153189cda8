"""schemaflow: declarative, git-driven schema migrations for Hive-metastore tables and views."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "schemaflow-hive"  # the name on the package index; "schemaflow" there is another project

try:
    __version__ = version(DISTRIBUTION)  # derived from git tags when it was installed (setuptools-scm)
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.0.0+unknown"
