"""schemaflow: declarative, git-driven schema migrations for Hive-metastore tables and views."""
from __future__ import annotations

__version__ = "0.1.0"
