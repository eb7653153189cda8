"""The copy a rewrite fills its staging table with: in chunks, each verified as it lands and journaled on the staging
table, so that a stopped run resumes where it stopped and what writers change meanwhile is copied again.

**Units.** Where each partition of the table becomes exactly one partition of the new table (the same partition
columns in the same order, renamed at most, their types unchanged), a unit is one partition, and a chunk of them is
written with Spark's dynamic partition overwrite: copying a unit again replaces what it wrote before. Otherwise (an
unpartitioned table, partition columns that change) a unit is a slice of the whole table's rows, chosen by a hash of
their values (``rewrite_rounds.slices``), appended to the staging table.

**Fingerprints.** What a write to a unit changes: the name, length and modification time of each file under its folder
(``table_files.held``: a new file, a partition overwritten); for the whole table (each of its slices), those under its
folder and under every partition kept elsewhere.

**Journal.** In the metastore, beside the claims a stopped apply leaves, on the staging table: a digest of what
fills it (its definition and the query; a staging table filled for another plan is made again), and, appended as each
chunk is verified, its units with the fingerprint each source had when it was read (``schemaflow.copied.<n>``); a
slice's, also the totals it wrote and a digest of the staging table's files once they landed.

**Rounds and chunks** (decided by ``catalog.hive.rewrite_rounds``). Each round copies, a chunk at a time, the units whose
fingerprint differs from the journal's: every unit at first, after a stop those left, then those writers changed
during the copy (and drops what the copy holds of units gone meanwhile), until a round finds nothing to copy, when the
cut-over follows at once. Writers that keep writing through ``ROUNDS`` rounds stop the rewrite; what was copied is kept
for the next apply. A chunk holds about ``model.CHUNK_SECONDS`` of copying at the rate the plan estimates with (2.2 GB
on two cores, whatever Spark's defaults), which is what a stop loses at most; the whole table is copied a slice (about a
chunk) at a time, and a stop loses the slice being copied (all of them, stopped as a slice's files landed, before its
mark: the copy is made anew rather than hold its rows twice).

**Verification.** A chunk's rows are counted and checksummed as Spark writes them (``Dataset.observe``: the table is
read once) and compared with the same totals read back from what it wrote; a slice's totals are journaled (with those
of every row its job read, observed before it picks the slice's rows), and once the last is copied their sum is
compared with those of every row (the slices hold each row once) and with the totals read back from the whole copy,
which a slice cannot be told apart in without reading all of it. A difference, or a value a conversion turned into NULL, drops the staging table and
stops the rewrite, the table untouched.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, assert_never

from sqlglot import exp

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.delta_log import is_delta, read_delta_log
from schemaflow.catalog.hive.jvm import jvm_view
from schemaflow.catalog.hive.rewrite_rounds import (ROUNDS, Copy, CutOver, Stop, Unit, chunks, next_round, order,
                                               slice_numbers, task_bytes, whole)
from schemaflow.catalog.hive.table_files import held, partitions_data
from schemaflow.catalog.hive.thrift_data import parse_name
from schemaflow.errors import SchemaflowError
from schemaflow.model import HIVE_DEFAULT_PARTITION, REWRITE_OF, VERSION_KEY, Table, split_key
from schemaflow.sql import ddl
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.rewrite import (HIGH, LOST, LOW, ROWS, Filled, checksums, flagged, in_slices, moved, one_to_one,
                                    stored, totals, within)
from schemaflow.wording import duration, plural, size

# On the staging table: a digest of the statements that fill it (a copy made for another plan is made again).
PLANNED = "schemaflow.rewrite_plan"
# + a sequence number, on the staging table: units copied and verified, each with the fingerprint its source had
# when read (JSON); a later entry for a unit replaces an earlier one, "" unmarks it. The journal a stopped run is
# resumed from: appended to, one parameter per chunk (or more: a metastore keeps a parameter's value within
# 32,672 characters, Derby's VARCHAR).
COPIED_PREFIX = "schemaflow.copied."
MARK_CHARACTERS = 30_000
# Spark's checks on an INSERT with dynamic partitions into a Hive table, lifted for the copy (a table may have any
# number of partitions), and the overwrite of only the partitions a chunk writes; put back as they were after.
DYNAMIC_PARTITIONS = {"hive.exec.dynamic.partition": "true", "hive.exec.dynamic.partition.mode": "nonstrict",
                      "hive.exec.max.dynamic.partitions": "100000000",
                      "hive.exec.max.dynamic.partitions.pernode": "100000000",
                      "spark.sql.sources.partitionOverwriteMode": "dynamic"}
# A metastore may refuse to select partitions by a key that is not a string (Hive 3.1 on PostgreSQL: "Filtering is
# supported only on partition keys of type string"), where a chunk's reads select them: Spark then lists the table's
# partitions and selects them itself.
FILTER_FALLBACK = {"spark.sql.hive.metastorePartitionPruningFallbackOnException": "true"}
# What Spark gives a task to read, which a chunk's tasks read at most (``rewrite_rounds.task_bytes``).
SPLIT = "spark.sql.files.maxPartitionBytes"
SHOWN_DIFFERENCES = 10  # partitions a failed verification lists; the rest are counted

Totals = dict[str, int | None]  # a verification query's (``sql.rewrite.totals``), by name


@dataclass(frozen=True)
class Copying:
    """What the copy of ``key`` into ``staging`` moves, and how it is divided into units."""

    key: str
    staging: str
    table: Table                             # the new definition
    columns: tuple[Filled, ...]
    source_keys: tuple[tuple[str, str], ...]  # partition columns (name, type) copied unit by unit; () the whole
    target_keys: tuple[tuple[str, str], ...]  # the same columns in the new table
    settings: Mapping[str, str] = field(default_factory=dict)  # Spark settings the copy writes with

    def where(self, units: Sequence[Unit]) -> tuple[exp.Condition | None, exp.Condition | None]:
        """The conditions selecting the partitions ``units`` in the table and in the copy (None, None: slices,
        ``slice_of``)."""
        if not self.source_keys:
            return None, None
        return within(self.source_keys, units), within(self.target_keys, units)

    def slice_of(self, units: Sequence[Unit]) -> exp.Condition | None:
        """The condition selecting the slices ``units`` among the rows moved (None: partitions, or the one slice)."""
        if self.source_keys:
            return None
        count, numbers = slice_numbers(units)
        return in_slices(self.columns, count, numbers) if count > 1 else None


def copying(source: Any, key: str, staging: str, table: Table, columns: Sequence[Filled],
            settings: Mapping[str, str]) -> Copying:
    """How the table ``source`` (its metastore entry) is copied into ``staging`` as ``table``, written with the Spark
    ``settings``: partition by partition where each of its partitions becomes one of the new table's
    (``sql.rewrite.one_to_one``), else whole."""
    have = tuple((c.getName().lower(), c.getType().lower()) for c in source.getPartitionKeys())
    want = [c.name for c in table.partition_columns]
    if not one_to_one(columns, want, [name for name, _ in have]):
        return Copying(key, staging, table, tuple(columns), (), (), settings)
    filled = {f.column: f for f in columns}
    return Copying(key, staging, table, tuple(columns), have, tuple((w, filled[w].type) for w in want), settings)


def copy(client: HiveClient, source: Any, plan: Copying, create: str, claim: str) -> None:
    """Fill ``plan.staging`` from ``source`` in rounds (``catalog.hive.rewrite_rounds``); return once a round found nothing
    to copy, for the cut-over to follow at once. ``create`` is the staging table's CREATE, ``claim`` the claim it is
    born with."""
    digest = hashlib.sha256(f"{create.replace(claim, '')}\n{flagged(plan.key, plan.columns)}".encode()).hexdigest()
    _prepared(client, plan, create, claim, digest, keep=True)
    cores = int(client.spark.sparkContext.defaultParallelism)
    # As Spark reads it ("128m", "134217728b"): set, or its default.
    split = int(jvm_view(client.spark).org.apache.spark.network.util.JavaUtils.byteStringAsBytes(
        client.spark.conf.get(SPLIT)))
    # Tasks of at most a WAVES-th of a core's chunk (Spark's task size left as it is where that is less).
    with _settings(client, {SPLIT: str(task_bytes(split))} if task_bytes(split) < split else {}):
        _rounds(client, source, plan, partial(_prepared, client, plan, create, claim, digest, keep=False), cores, split)


def _rounds(client: HiveClient, source: Any, plan: Copying, remake: Callable[[], None], cores: int,
            split: int) -> None:
    """The rounds of the copy (``copy``), on a session of ``cores`` whose tasks read ``split`` bytes; ``remake``
    makes the staging table anew."""
    copied_bytes, started = 0, time.monotonic()
    for copied in itertools.count():
        listing = _listing(client, source, bool(plan.source_keys))
        marks, held = _journal(client, plan)
        strays = False
        if not plan.source_keys:  # the whole table, in slices
            [(table_bytes, fingerprint)] = listing.values()
            sliced = whole(table_bytes, fingerprint, cores, split, marks)
            listing = {u: (table_bytes // len(sliced), f) for u, f in sliced.items()}
            strays = bool(marks) and _landed(client, plan)[1] != _files_digest(client, plan)
        decided = next_round(copied, {u: f for u, (_, f) in listing.items()}, marks, frozenset(held),
                             sliced=not plan.source_keys, strays=strays)
        total = sum(b for b, _ in listing.values())
        done = len(listing) - (0 if isinstance(decided, CutOver) else len(decided.stale))
        if copied == 0 and done:
            client.report(f"resuming the copy of {plan.key}: {_done(plan, done, len(listing))} by a stopped run")
        elif copied == 0 and strays:
            client.report(f"copying the rows of {plan.key} anew: a stopped run wrote a slice into {plan.staging} "
                          "without marking it, and its rows cannot be told from the others'")
        elif copied == 0:
            client.report(f"copying the rows of {plan.key} into {plan.staging}: {_units(plan, len(listing))}, "
                          f"{size(total)}")
        match decided:
            case CutOver():
                if not plan.source_keys:
                    _verify_whole(client, plan, list(listing))
                return
            case Stop():
                raise SchemaflowError(
                    f"the rewrite of {plan.key} stopped before the cut-over: writers kept changing it through "
                    f"{ROUNDS} rounds of copying ({_units(plan, len(decided.stale))} changed again). {plan.key} is "
                    f"unchanged; what was copied is kept in {plan.staging}, and the next apply copies only the rest: "
                    "apply again when its writers pause")
            case Copy() if copied:
                client.report(f"copying again what was written to {plan.key} during the copy: "
                              f"{_units(plan, len(decided.stale))}")
            case Copy():
                pass
            case _:
                assert_never(decided)
        _drop_partitions(client, plan, decided.dropped)
        _mark(client, plan, dict.fromkeys(decided.unmarked, ""))
        if decided.anew:
            remake()  # the whole table again, anew
        sizes = {u: b for u, (b, _) in listing.items()}
        # A slice is a chunk (its totals journaled apart): ``whole`` sized it as one.
        for chunk in chunks(decided.stale, sizes, cores, split, total) if plan.source_keys else (
                [u] for u in decided.stale):
            _drop_partitions(client, plan, [u for u in chunk if u in decided.replaced])
            landed = None
            if plan.source_keys:
                _copy_chunk(client, plan, chunk)
            else:
                written, read = _copy_slice(client, plan, chunk)
                landed = (written, _files_digest(client, plan), read)
            # Marked with what its source was before the copy: one written to meanwhile differs at the next look.
            _mark(client, plan, {u: listing[u][1] for u in chunk}, landed)
            done += len(chunk)
            copied_bytes += sum(sizes[u] for u in chunk)
            left = sum(sizes[u] for u in decided.stale) - copied_bytes if copied == 0 else 0
            eta = f", about {duration((time.monotonic() - started) / copied_bytes * left)} left" if (
                copied_bytes and left > 0) else ""
            client.report(f"{plan.key}: {_done(plan, done, len(listing))}"
                          f" ({size(copied_bytes)} this run){eta}")


def _done(plan: Copying, done: int, count: int) -> str:
    """How much of the table is copied: "3 of 12 partitions copied", "2 of 7 slices copied", "the whole table
    copied"."""
    if plan.source_keys or count > 1:
        return f"{done} of {plural(count, 'partition' if plan.source_keys else 'slice')} copied"
    return "the whole table copied"


def _units(plan: Copying, count: int) -> str:
    if plan.source_keys:
        return plural(count, "partition")
    return f"the whole table, in {count} slices" if count > 1 else "the whole table"


def _prepared(client: HiveClient, plan: Copying, create: str, claim: str, digest: str, keep: bool) -> None:
    """The staging table: a stopped run's, kept when ``keep`` and it was filled by the same statements (``digest``)
    and, copied whole, completely; else created anew."""
    database, name = split_key(plan.staging)
    if client.retrying(lambda: client.msc.tableExists(database, name)):
        parameters = client.retrying(lambda: client.msc.getTable(database, name)).getParameters()
        if parameters.get(REWRITE_OF) != plan.key:
            raise SchemaflowError(f"{plan.staging} exists and is no copy of {plan.key} a rewrite began: rename or drop "
                                  "it, then apply again. Nothing was changed")
        if keep and parameters.get(PLANNED) == digest and (plan.source_keys or _marks(parameters)):
            return
        client.spark.sql(ddl.drop("table", plan.staging))
    client.spark.sql(create)
    made = client.retrying(lambda: client.msc.getTable(database, name))
    made.getParameters().put(REWRITE_OF, plan.key)
    made.getParameters().put(PLANNED, digest)
    if is_delta(made.getParameters()):
        # delta-spark writes none of a table's properties into its entry (its claim is in its log): the entry takes
        # the claim by a plain write, as a created Delta table's does (``Metastore.create_delta``).
        made.getParameters().put(VERSION_KEY, claim)
        client.alter(made)
    else:
        client.alter(made, claim)


def _journal(client: HiveClient, plan: Copying) -> tuple[dict[Unit, str], set[Unit]]:
    """The units the copy holds verified, each with the fingerprint marked for it, and the partitions it holds (of
    those, the ones not marked a stopped chunk wrote)."""
    database, name = split_key(plan.staging)
    marks = _marks(client.retrying(lambda: client.msc.getTable(database, name)).getParameters())
    if not plan.source_keys:
        return marks, set()
    names = jvm_view(client.spark).java.lang.String.join(
        "\n", client.retrying(lambda: client.msc.listPartitionNames(database, name, -1)))
    return marks, {_unit(parse_name(n)) for n in names.split("\n") if n}


def _marks(parameters: Any) -> dict[Unit, str]:
    """The journal in the staging table's ``parameters``: the last mark of each unit, unmarked ones left out."""
    found: dict[Unit, str] = {}
    for unit, fingerprint, *_ in _entries(parameters):
        found[tuple(unit)] = fingerprint
    return {u: f for u, f in found.items() if f}


def _entries(parameters: Any) -> list[list[Any]]:
    """The journal's entries, in the order written: ``[unit, fingerprint]``, a slice's ``[unit, fingerprint, totals,
    digest]``."""
    keys = sorted(k for k in parameters.keySet() if k.startswith(COPIED_PREFIX))
    return [entry for key in keys for entry in json.loads(parameters.get(key))]


def _landed(client: HiveClient, plan: Copying) -> tuple[dict[Unit, Totals], str | None, Totals]:
    """The totals each slice marked wrote, and, as the last mark found them, the digest of the copy's files and the
    totals of every row of the table."""
    database, name = split_key(plan.staging)
    entries = _entries(client.retrying(lambda: client.msc.getTable(database, name)).getParameters())
    last = entries[-1] if entries and len(entries[-1]) > 4 else [None] * 5
    return {tuple(e[0]): e[2] for e in entries if len(e) > 4}, last[3], last[4] or {}


def _files_digest(client: HiveClient, plan: Copying) -> str:
    """A digest of the files the staging table holds (``table_files.held``)."""
    database, name = split_key(plan.staging)
    location = client.retrying(lambda: client.msc.getTable(database, name)).getSd().getLocation().rstrip("/")
    return held(client, location, [location])[location].digest


def _unit(values: Sequence[str]) -> Unit:
    return tuple(None if v == HIVE_DEFAULT_PARTITION else v for v in values)


def _mark(client: HiveClient, plan: Copying, marks: Mapping[Unit, str],
          landed: tuple[Totals, str, Totals] | None = None) -> None:
    """Append ``marks`` (a unit's fingerprint, or "" to unmark it) to the journal on the staging table, in one write
    guarded by the staging table's own stamp; ``landed``: a slice's, with the totals it wrote, the digest of the
    copy's files with it and the totals of every row of the table it read."""
    if not marks:
        return
    database, name = split_key(plan.staging)
    staged = client.retrying(lambda: client.msc.getTable(database, name))
    parameters = staged.getParameters()
    count = sum(1 for k in parameters.keySet() if k.startswith(COPIED_PREFIX))
    entries = [json.dumps([list(u), f, *(landed or ())], separators=(",", ":"))
               for u, f in sorted(marks.items(), key=lambda m: order(m[0]))]
    piece: list[str] = []
    for entry in [*entries, None]:
        if piece and (entry is None or sum(map(len, piece)) + len(piece) + len(entry) + 2 > MARK_CHARACTERS):
            parameters.put(f"{COPIED_PREFIX}{count:06d}", f"[{','.join(piece)}]")
            count, piece = count + 1, []
        if entry is not None:
            piece.append(entry)
    client.alter(staged, parameters.get(VERSION_KEY))


def journal_keys(parameters: Any) -> list[str]:
    """The parameters of the journal on a staging table, to unset as it takes the table's name."""
    return sorted(k for k in parameters.keySet() if k.startswith(COPIED_PREFIX) or k == PLANNED)


def _drop_partitions(client: HiveClient, plan: Copying, units: Sequence[Unit]) -> None:
    """Drop the copy's partitions ``units``, with their files (nothing, copied whole: the copy is made anew)."""
    database, name = split_key(plan.staging)
    jvm = client.spark._jvm
    for unit in units if plan.source_keys else ():
        values = [HIVE_DEFAULT_PARTITION if v is None else v for v in unit]
        client.retrying(partial(client.msc.dropPartition, database, name, jvm.java.util.ArrayList(values), True))


def _listing(client: HiveClient, source: Any, by_partition: bool) -> dict[Unit, tuple[int, str]]:
    """Each unit of the table ``source`` with its bytes and fingerprint, from one listing of its folder
    (``table_files.held``)."""
    location = source.getSd().getLocation().rstrip("/")
    if not source.getPartitionKeys():
        found = held(client, location, [location])[location]
        # A Delta table's commits that write no data file (a schema's, a property's) are in its log alone, whose folder
        # the listing skips (``_delta_log``, as Spark skips ``_`` names): the log's version is part of the fingerprint.
        logged = (f"|log {read_delta_log(location, (location,)).state.log_version}"
                  if is_delta(source.getParameters()) else "")
        return {(): (found.bytes, found.digest + logged)}
    folders = {_unit(p["values"]): p["sd"]["location"].rstrip("/") for p in partitions_data(client, source)}
    if by_partition:
        listed = held(client, location, sorted(set(folders.values())))
        return {u: (listed[folder].bytes, listed[folder].digest) for u, folder in folders.items()}
    elsewhere = sorted({f for f in folders.values() if not f.startswith(location + "/")} - {location})
    whole = held(client, location, [location, *elsewhere])
    digest = hashlib.sha256(",".join(whole[f].digest for f in [location, *elsewhere]).encode()).hexdigest()[:32]
    return {(): (sum(h.bytes for h in whole.values()), f"{len(folders)}|{digest}")}


def _copy_chunk(client: HiveClient, plan: Copying, chunk: Sequence[Unit]) -> None:
    """Copy the partitions of ``chunk`` into the staging table and verify them; a difference drops it and stops."""
    source_where, target_where = plan.where(chunk)
    with _settings(client, FILTER_FALLBACK):
        with _settings(client, _write_settings(plan)):
            written = _write(client, plan, source_where)
        lost = _lost(client, plan, written)
        _stop_on(client, plan, _differences(client, plan, written, source_where, target_where), lost)


def _copy_slice(client: HiveClient, plan: Copying, units: Sequence[Unit]) -> tuple[Totals, Totals]:
    """Copy the slices ``units`` into the staging table, their conversions verified (the rest with the whole copy:
    ``_verify_whole``); a value a conversion turned into NULL drops it and stops. The totals of what it wrote, and of
    every row of the table it read."""
    with _settings(client, _write_settings(plan)):
        written, read = _observed(client, plan, None, plan.slice_of(units))
    _stop_on(client, plan, _lost(client, plan, written))
    return written, read


def _write_settings(plan: Copying) -> dict[str, str]:
    """The Spark settings a copy writes with: dynamic partitions into a Hive table or unit by unit, and the plan's."""
    hive_partitioned = bool(plan.table.partition_columns) and not plan.table.data_source
    return {**(DYNAMIC_PARTITIONS if hive_partitioned or plan.source_keys else {}), **plan.settings}


def _verify_whole(client: HiveClient, plan: Copying, units: Sequence[Unit]) -> None:
    """Compare the totals the slices ``units`` wrote, summed, with those of every row of the table (as the last slice
    read it: the slices hold each row once) and with those of the whole copy; a difference drops it and stops."""
    landed, _, read = _landed(client, plan)
    written = [landed[u] for u in units]
    rows = sum(w[ROWS] or 0 for w in written)
    summed = {k: sum(w[k] or 0 for w in written) if rows or k == ROWS else None for k in written[0]}
    if summed != read:
        _stop_on(client, plan, f"its {plural(len(units), 'slice')} hold {plural(rows, 'row')}, its rows read "
                               f"{read.get(ROWS)}, or their checksums differ (a run that puts rows in other slices, "
                               "another Spark, resumed the copy)")
    with _settings(client, FILTER_FALLBACK):
        _stop_on(client, plan, _differences(client, plan, summed, None, None))


def _stop_on(client: HiveClient, plan: Copying, *found: str) -> None:
    """Drop the copy and stop the rewrite where any of ``found`` says something ("": nothing)."""
    differences = "; ".join(d for d in found if d)
    if differences:
        client.spark.sql(ddl.drop("table", plan.staging))
        raise SchemaflowError(f"the rewrite of {plan.key} stopped before the cut-over: {differences}. {plan.key} is "
                              "unchanged and the copy was dropped")


def _write(client: HiveClient, plan: Copying, where: exp.Condition | None) -> Totals:
    """Write the rows the rewrite's query moves out of the table (those ``where`` selects) into the staging table
    (``_observed``): their totals."""
    return _observed(client, plan, where, None)[0]


def _observed(client: HiveClient, plan: Copying, where: exp.Condition | None,
              among: exp.Condition | None) -> tuple[Totals, Totals]:
    """Write the rows the rewrite's query moves out of the table (those ``where`` selects, and of them, those ``among``
    selects) into the staging table, as ``INSERT [OVERWRITE] staging <select>`` does (by position; overwriting the
    partitions written, copied unit by unit), observing their totals (``sql.rewrite.totals``) as they are written,
    and, read in the same job, those of every row ``where`` selects."""
    from pyspark.sql import Observation, functions

    observation = Observation(f"schemaflow rewrite {time.monotonic_ns()}")
    rows = client.spark.sql(flagged(plan.key, plan.columns, where))
    everything: Observation | None = None
    if among is not None:  # observed before the filter, which Spark moves no filter below
        everything = Observation(f"schemaflow rewrite read {time.monotonic_ns()}")
        rows = rows.observe(everything, *(functions.expr(total) for total in totals(plan.columns))).where(
            among.sql(dialect=DIALECT))
    observed = rows.observe(observation, *(functions.expr(total) for total in totals(plan.columns, nulled=True)))
    observed.select(*(observed[f.column] for f in plan.columns)).write.insertInto(
        plan.staging, overwrite=bool(plan.source_keys))
    written = dict(observation.get)
    return written, dict(everything.get) if everything is not None else {
        k: v for k, v in written.items() if not k.startswith(LOST)}


def _differences(client: HiveClient, plan: Copying, written: dict[str, int | None],
                 source_where: exp.Condition | None, target_where: exp.Condition | None) -> str:
    """What differs between the rows written (their totals, ``written``, ``_lost`` taken out) and those the copy holds
    of them, per partition where any does ("": nothing)."""
    columns = plan.columns
    problems = []
    if client.spark.sql(checksums(stored(plan.staging, target_where), columns, ())).collect()[0].asDict() != written:
        keys = [c.name for c in plan.table.partition_columns]
        want = _by_partition(client.spark.sql(checksums(moved(plan.key, columns, source_where), columns, keys))
                             .collect(), keys)
        have = _by_partition(client.spark.sql(checksums(stored(plan.staging, target_where), columns, keys)).collect(),
                             keys)
        found = []
        for partition in sorted(want.keys() | have.keys()):
            a, b = want.get(partition, {ROWS: 0}), have.get(partition, {ROWS: 0})
            if a != b:
                where = ", ".join(f"{k}={v}" for k, v in zip(keys, partition, strict=True)) or "the table"
                differing = [c.column for c in columns if any(a.get(half + c.column) != b.get(half + c.column)
                                                              for half in (HIGH, LOW))]
                found.append(f"{where}: {a[ROWS]} rows moved, {b[ROWS]} copied"
                             + (f", checksums of {', '.join(differing)} differ" if differing else ""))
        more = f" and {len(found) - SHOWN_DIFFERENCES} more" if len(found) > SHOWN_DIFFERENCES else ""
        problems.append("the copy differs from the rows moved" + (" in " + "; ".join(found[:SHOWN_DIFFERENCES]) + more
                                                                  if found else " (the source changed meanwhile)"))
    return "; ".join(problems)


def _lost(client: HiveClient, plan: Copying, written: dict[str, int | None]) -> str:
    """The values a conversion turned into NULL that no migration accepts ("": none), taken out of ``written``; those
    accepted are reported."""
    columns = plan.columns
    nulled = {f.column: int(written.pop(LOST + f.column) or 0) for f in columns if f.lossy}
    by_column = {f.column: f for f in columns}
    lost = {column: f"{plural(count, 'value')} of {column} ({by_column[column].old_type}) became NULL as "
                    f"{by_column[column].type}" for column, count in sorted(nulled.items()) if count}
    for column, said in lost.items():
        if by_column[column].accepts_loss:
            client.report(f"{plan.key}: {said}, as a migration accepts")
    return "; ".join(said for column, said in lost.items() if not by_column[column].accepts_loss)


def _by_partition(rows: Sequence[Any], keys: Sequence[str]) -> dict[tuple[str, ...], dict[str, int]]:
    """Each row of a checksum query by the text of its partition values."""
    found = {}
    for row in rows:
        values = row.asDict()
        found[tuple(str(values.pop(k)) for k in keys)] = values
    return found


@contextmanager
def _settings(client: HiveClient, values: Mapping[str, str]) -> Iterator[None]:
    """The session's SQL settings ``values`` set for the duration, then put back as they were."""
    conf = client.spark.conf
    before = {k: conf.get(k, None) for k in values}
    for k, v in values.items():
        conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)
