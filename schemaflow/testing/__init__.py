"""The duties every catalog backend owes schemaflow, as a test suite a backend runs against itself (as Alembic ships
``alembic.testing.suite`` for its dialects).

A backend's tests subclass ``BackendSuite`` with a ``Harness`` that says how to reach a fresh catalog of that backend
and how another writer changes it; pytest (or unittest) then runs every duty through the commands as users run them.
See docs/guides/writing-a-backend.md.
"""
from schemaflow.testing.harness import Harness
from schemaflow.testing.suite import BackendSuite

__all__ = ["BackendSuite", "Harness"]
