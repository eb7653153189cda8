"""What each round of a rewrite's copy does, decided from what it saw: the pure half of ``catalog.hive.rewrite_copy``.

**Rounds.** Each round looks at the table (each unit's fingerprint: ``catalog.hive.table_files.held``) and at the journal on
the staging table (the fingerprint each unit had when its copy was verified) and the partitions the staging table
holds. A unit whose fingerprint differs from its mark (not copied yet, written to since) is copied again; what the
copy holds or marks of a unit gone from the table (a partition dropped meanwhile) is dropped and unmarked. A round
that finds neither cuts over; after ``ROUNDS`` rounds that copied, a look that still finds some stops the rewrite
(writers that keep writing), what was copied kept for the next apply. The whole table's slices (below) are copied anew
whenever one is copied again (a staging table cannot be half-overwritten by a copy that is not by partition).

**Chunks.** The units of a round are copied a chunk at a time, in their order: a chunk holds about ``CHUNK_SECONDS``
of copying at the rate the plan estimates with (``model.COPY_RATE``) on the session's cores, whatever Spark's
defaults: 2.2 GB on two cores. Within that, it is at least ``WAVES`` waves of the session's tasks, so that a job's
fixed costs (its listing, its commit, the partitions it registers, the read-back) stay small beside its copying:
where Spark would give a task more than a ``WAVES``-th of a core's share (``spark.sql.files.maxPartitionBytes``, 128
MiB by default, set higher), the copy reads in smaller tasks; where less, the chunk is smaller too (it never holds
fewer than ``WAVES`` waves' worth). Two floors: a table larger than ``MOST_CHUNKS`` chunks of that size (440 GB on two
cores) is copied in chunks of a ``MOST_CHUNKS``-th of it, so that its journal stays small; a partition larger than a
chunk is a chunk of its own. A chunk names at most ``CHUNK_UNITS`` partitions. A stop loses at most the chunk being
copied.

**Slices.** The whole table copied as one unit (unpartitioned, or its partition columns changed: each partition of the
new table takes rows from any of the table's) is copied in ``slice_count`` slices of its rows, each about a chunk: a row
is in slice ``pmod(xxhash64(<its values>), N)`` (``sql.rewrite.in_slices``: the hash its checksum takes of the values
it is copied with), a function of the values alone, so that
every read of an unchanged table puts each row in the same one slice whatever its files, tasks or engine (unlike
``input_file_name()``, which Spark treats as nondeterministic and whose groups follow the files writers replace). A
slice is appended to the copy: it cannot be overwritten on its own, so each slice's mark holds the totals it wrote and
the digest of the copy's files once it landed, and the copy is verified once, whole, against their sum. A resumed copy
skips the slices marked and copies the rest; one whose files landed without their mark (the copy holds files its last
mark does not account for: ``strays``) cannot be told from those marked, and the copy is made anew rather than hold its
rows twice. The slices of a copy keep their count (the journal's) while the table is unchanged; a table changed since
a slice was copied is copied anew, as is one whose slices differ from the journal's.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from schemaflow.model import CHUNK_SECONDS, COPY_RATE, MOST_CHUNKS

ROUNDS = 4           # the first copy and three catch-ups of what writers changed meanwhile
WAVES = 8            # waves of the session's tasks a chunk holds at least (see the module docstring)
CHUNK_UNITS = 1000   # partitions named in one chunk's condition

Unit = tuple[str | None, ...]  # a partition's values (None: NULL), or one slice of the whole table (``slices``)


@dataclass(frozen=True)
class Copy:
    """A round that copies: ``stale`` in order (those of ``replaced`` dropped from the copy first: copied before, or
    written by a stopped chunk), after dropping the copy's partitions ``dropped`` and unmarking ``unmarked`` (units gone
    from the table); ``anew``: the whole table, copied before, is copied into a new staging table."""

    stale: tuple[Unit, ...]
    replaced: frozenset[Unit]
    dropped: tuple[Unit, ...]
    unmarked: tuple[Unit, ...]
    anew: bool


@dataclass(frozen=True)
class CutOver:
    """Nothing left to copy: the cut-over follows at once."""


@dataclass(frozen=True)
class Stop:
    """Writers kept changing the table through ``ROUNDS`` rounds: ``stale`` units are still to copy."""

    stale: tuple[Unit, ...]


Round = Copy | CutOver | Stop


def order(unit: Unit) -> tuple[tuple[bool, str], ...]:
    """The order units are copied in: by their values, NULL last."""
    return tuple((v is None, v or "") for v in unit)


def next_round(copied: int, listing: Mapping[Unit, str], marks: Mapping[Unit, str], held: frozenset[Unit],
               sliced: bool = False, strays: bool = False) -> Round:
    """What the round after ``copied`` rounds that copied does, given each unit of the table with its fingerprint
    (``listing``), the journal (``marks``) and the partitions the copy holds (``held``; none, copied whole). ``sliced``:
    the units are slices of the whole table, which a copy cannot replace one by one: one copied before and stale (or
    gone), or ``strays`` in the copy, and the whole table is copied anew."""
    stale = tuple(sorted((u for u in listing if marks.get(u) != listing[u]), key=order))
    gone = sorted((held | marks.keys()) - listing.keys(), key=order)
    if not stale and not gone and not strays:
        return CutOver()
    if copied >= ROUNDS:
        return Stop(stale)
    if sliced and (strays or any(u in marks for u in (*stale, *gone))):
        return Copy(tuple(sorted(listing, key=order)), frozenset(), (), (), anew=True)
    return Copy(stale, frozenset(u for u in stale if u in held), tuple(u for u in gone if u in held),
                tuple(u for u in gone if u in marks), anew=False)


def slices(count: int, fingerprint: str) -> dict[Unit, str]:
    """The ``count`` slices of the whole table, each fingerprinted as the table is: ``("00002/00007",)``, slice 2 of 7."""
    return {(f"{i:05d}/{count:05d}",): fingerprint for i in range(count)}


def slice_numbers(units: Sequence[Unit]) -> tuple[int, tuple[int, ...]]:
    """How many slices ``units`` (of ``slices``) are of, and which."""
    parsed = [tuple(int(n) for n in (u[0] or "").split("/")) for u in units]
    return parsed[0][1], tuple(i for i, _ in parsed)


def whole(total: int, fingerprint: str, cores: int, split: int, marks: Mapping[Unit, str]) -> dict[Unit, str]:
    """The slices the whole table (``total`` bytes, fingerprinted ``fingerprint``) is copied in: as many as the journal's
    marks of the same table are of (a resumed copy keeps its slices, whatever the session), else ``slice_count``. A
    mark of another kind (the whole table as one unit, ``()``, as a copy before slices marked it) is no slice: gone,
    it makes the copy anew (``next_round``)."""
    counts = [slice_numbers([u])[0] for u, f in marks.items() if f == fingerprint and u and "/" in (u[0] or "")]
    return slices(counts[0] if counts else slice_count(total, cores, split), fingerprint)


def slice_count(total: int, cores: int, split: int) -> int:
    """How many slices a table of ``total`` bytes is copied in: each about a chunk (``chunks``)."""
    return min(max(math.ceil(total / _budget(cores, split, total)), 1), MOST_CHUNKS)


def task_bytes(split: int) -> int:
    """What a task of the copy reads at most: Spark's ``split``, and at most a ``WAVES``-th of a core's chunk."""
    return max(min(split, COPY_RATE * CHUNK_SECONDS // WAVES), 1)


def chunks(units: Sequence[Unit], sizes: Mapping[Unit, int], cores: int, split: int,
           total: int) -> Iterator[list[Unit]]:
    """``units`` in chunks (see the module docstring), for a session of ``cores`` whose tasks read ``split`` bytes
    (``task_bytes``), of a table of ``total`` bytes."""
    budget = _budget(cores, split, total)
    chunk: list[Unit] = []
    held = 0
    for unit in units:
        chunk.append(unit)
        held += sizes[unit]
        if held >= budget or len(chunk) >= CHUNK_UNITS:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk


def _budget(cores: int, split: int, total: int) -> int:
    """The bytes a chunk holds at least (see the module docstring)."""
    return max(cores * task_bytes(split) * WAVES, total // MOST_CHUNKS, 1)
