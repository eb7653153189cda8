"""What AWS Glue does on ``UpdateTable`` and moto (5.2) does not: the tests' layer over moto's Glue.

AWS refuses an ``UpdateTable`` whose ``VersionId`` is not the table's current version with
``ConcurrentModificationException`` (https://docs.aws.amazon.com/glue/latest/webapi/API_UpdateTable.html): the
compare-and-swap every schemaflow write to a Glue table goes through. moto reads neither ``VersionId`` nor
``SkipArchive`` (``moto/glue/responses.py``: ``update_table`` passes the ``TableInput`` alone to the backend, which
stores a new version whatever was asked), so two writers silently lose one's change. ``versioned_glue()`` wraps
moto's response handler for the time of a ``with``: a request carrying a ``VersionId`` other than the table's
current one is refused as AWS refuses it, before moto stores anything; one without is taken as AWS takes it.
``SkipArchive`` is recorded (``Versions.skip_archive``), not acted on: what AWS keeps of the versions it does not
archive was not measured. moto numbers versions from 1 (AWS from 0); nothing here assumes either.

moto has no ``ConcurrentModificationException`` class for Glue (it raises the code inline for resource policies
only), so it is defined here as a subclass of moto's Glue client error, answered as AWS answers it (HTTP 400,
``__type`` the exception's name), which botocore turns into ``client.exceptions.ConcurrentModificationException``.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from threading import Lock
from dataclasses import dataclass, field
from typing import Any

import pytest
from moto import mock_aws
from moto.glue.exceptions import GlueClientError
from moto.glue.responses import GlueResponse


class ConcurrentModificationException(GlueClientError):
    def __init__(self, database: str, table: str, asked: str, current: str) -> None:
        super().__init__("ConcurrentModificationException",
                         f"Update table failed due to concurrent modifications: {database}.{table} is at version "
                         f"{current}, not {asked}")


@dataclass
class Versions:
    """What the layer saw: each ``UpdateTable``'s (database, table, SkipArchive) that landed, in order, and
    how many were refused."""

    skip_archive: list[tuple[str, str, bool]] = field(default_factory=list)
    refused: int = 0


@contextmanager
def moto_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto's AWS in this process for the time of a ``with``, with the made-up credentials it takes (no real ones are
    ever read)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        yield


@contextmanager
def versioned_glue() -> Iterator[Versions]:
    """moto's Glue, with ``UpdateTable``'s ``VersionId`` checked as AWS checks it, for the time of the ``with``
    (inside ``moto.mock_aws()`` or beside a ``ThreadedMotoServer`` of this process)."""
    seen = Versions()
    original = GlueResponse.update_table
    swap = Lock()  # the check and the store are one step, as AWS's are, for writers on threads of their own

    def update_table(self: GlueResponse) -> Any:
        database = str(self.parameters.get("DatabaseName"))
        name = str((self.parameters.get("TableInput") or {}).get("Name"))
        asked = self.parameters.get("VersionId")
        with swap:
            if asked is not None:
                current = str(self.glue_backend.get_table(database, name).as_dict()["VersionId"])
                if str(asked) != current:
                    seen.refused += 1
                    raise ConcurrentModificationException(database, name, str(asked), current)
            result = original(self)
            seen.skip_archive.append((database, name, bool(self.parameters.get("SkipArchive", False))))
        return result

    GlueResponse.update_table = update_table  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        GlueResponse.update_table = original  # type: ignore[method-assign]
