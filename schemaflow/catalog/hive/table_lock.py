"""The metastore's lock on a table, taken around a commit to an Iceberg table as Iceberg's own Hive catalog
takes it.

Iceberg's Hive catalog commits under an exclusive table lock of the metastore (``lock``, ``check_lock``
until it is acquired, the ``alter_table``, then ``unlock``) unless it is told to rely on the metastore's
compare-and-swap alone. A commit that swaps ``metadata_location`` by compare-and-swap is safe against
writers that swap it so too, but a writer holding the lock alters without the swap, once it has checked
the location under its lock: a swap made in between would be overwritten. So a commit takes the lock
wherever the metastore keeps locks, and keeps its compare-and-swap as well: against both kinds of writer.

A metastore that keeps no locks (an embedded one, or a server whose database lacks the transaction
tables, or that has no connection pool for them) refuses the lock call at once: the commit then relies on
the compare-and-swap alone, as Iceberg's lock-free mode does, and the client remembers not to ask again.
"""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.hive.jvm import jvm_view, unreachable
from schemaflow.errors import SchemaflowError
from schemaflow.model import split_key

WAIT_SECONDS = 180.0  # how long a lock another writer holds is waited for: Iceberg's own (iceberg.hive.lock-timeout-ms)
_POLL_SECONDS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)  # between checks of a waiting lock, then the last again


@contextmanager
def table_lock(client: HiveClient, key: str, wait: float = WAIT_SECONDS) -> Iterator[None]:
    """Hold the metastore's exclusive lock on the table ``key`` (``db.name``), where the metastore keeps locks.

    Another writer's lock is waited for, up to ``wait`` seconds; past that, nothing was done and the
    error says so. A lock this client holds already is held on (the metastore's locks are not re-entrant:
    a second request would wait for the first). Where the client guards its writes with the lock
    (``lock_guards``), a metastore that keeps none is refused: nothing would guard them."""
    if key in client.held_locks:
        yield
        return
    if client.takes_locks is False:
        _unguarded(client, key)
        yield
        return
    database, name = split_key(key)
    api = client.api
    component = api.LockComponent(api.LockType.EXCLUSIVE, api.LockLevel.TABLE, database)
    component.setTablename(name)
    components = jvm_view(client.spark).java.util.ArrayList()
    components.add(component)
    request = api.LockRequest(components, client.spark.sparkContext.sparkUser(), socket.gethostname())
    try:
        response = client.msc.lock(request)
    except Exception as error:
        if unreachable(error):
            raise
        client.takes_locks = False  # it keeps no locks: the compare-and-swap alone guards the commit
        _unguarded(client, key)
        yield
        return
    client.takes_locks = True
    lock_id = response.getLockid()
    try:
        _acquire(client, key, lock_id, str(response.getState().toString()), wait)
        client.held_locks.add(key)
        yield
    finally:
        client.held_locks.discard(key)
        client.msc.unlock(lock_id)


def _unguarded(client: HiveClient, key: str) -> None:
    if client.lock_guards:
        raise SchemaflowError(
            f"{key}: the metastore keeps no locks (its database lacks the transaction tables, or its server has no "
            "connection pool for them), and metastore.guard: lock guards every write with one; nothing was "
            "written. Give the metastore its transaction tables (Hive's schema tool creates them), or guard with "
            "its compare-and-swap (Hive 2.3.10 and later 2.3, 4.0)")


def _acquire(client: HiveClient, key: str, lock_id: int, state: str, wait: float) -> None:
    """Wait until the lock ``lock_id`` is acquired; raise if it is refused or not acquired within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    polls = iter(_POLL_SECONDS)
    if state == "WAITING":
        client.report(f"waiting for the metastore's lock on {key}, which another writer holds")
    while state == "WAITING" and time.monotonic() < deadline:
        time.sleep(next(polls, _POLL_SECONDS[-1]))
        state = str(client.msc.checkLock(lock_id).getState().toString())
    if state != "ACQUIRED":
        why = (f"another writer held it for more than {wait:.0f} s" if state == "WAITING"
               else f"the metastore answered {state}")
        raise SchemaflowError(f"{key}: the metastore's lock on it was not acquired ({why}); nothing was committed. "
                              "Apply again once the other writer is done")
