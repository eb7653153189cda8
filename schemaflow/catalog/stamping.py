"""The ``${live_state}`` duty of every catalog writer: a stamp's value that names the state the write leaves.

A stamp records ``state_digest`` of the object as the apply left it (``schemaflow.applied_state``), which drift
compares later. The plan cannot know that state (the catalog chooses locations, Spark writes its own parameters), so
it writes the placeholder ``model.LIVE_STATE``; the writer, which sees the object as its write leaves it, puts the
digest in its place within the same write. A writer that stored the placeholder would have drift report every
object after a clean apply. Only schemaflow's own keys are filled: a user's property may hold the same text, and is
stored as written.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from schemaflow.model import LIVE_STATE, SCHEMAFLOW_PREFIX, Object, state_digest


def fill_live_state(values: Mapping[str, str], after: Callable[[], Object]) -> dict[str, str]:
    """``values`` as a write stores them: each ``schemaflow.`` key whose value is ``LIVE_STATE`` holds the state digest
    of ``after()``, the object as the write leaves it (called only where one does)."""
    keys = [key for key, value in values.items() if value == LIVE_STATE and key.startswith(SCHEMAFLOW_PREFIX)]
    return {**values, **dict.fromkeys(keys, state_digest(after()))} if keys else dict(values)
