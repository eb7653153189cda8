"""What each round of a rewrite's copy does (``catalog.hive.rewrite_rounds``), every branch, without a JVM: the first copy,
a resumed one, writers caught up with, writers that outlast the rounds, partitions dropped during the copy (copied or
only marked), the whole table copied anew; chunks bounded by the plan's own rate whatever Spark's task size, and what
the plan's step says of them."""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from schemaflow.catalog.hive.rewrite_rounds import (CHUNK_UNITS, ROUNDS, WAVES, Copy, CutOver, Stop, Unit,
                                               chunks, next_round, slice_count, slice_numbers, slices, task_bytes,
                                               whole)
from schemaflow.model import CHUNK_SECONDS, COPY_RATE, MOST_CHUNKS, Column, Stored, Table
from schemaflow.plan.evolution import evolve
from schemaflow.plan.rewrite import RewriteTable, flat
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.rewrite import Filled, in_slices

A: Unit = ("a",)
B: Unit = ("b",)
C: Unit = ("c",)
NULL: Unit = (None,)
MiB = 1 << 20


def rounds(looks: list[dict[Unit, str]], marks: dict[Unit, str] | None = None,
           held: set[Unit] | None = None, sliced: bool = False) -> list[Copy | CutOver | Stop]:
    """The rounds of a copy that sees the table as ``looks`` says, one look a round, from the journal ``marks`` and the
    partitions ``held`` (a stopped run's), copying as each round decides: what it decided each round. ``sliced``: the
    units are slices of the whole table."""
    marks, held = dict(marks or {}), set(held or ())
    decided: list[Copy | CutOver | Stop] = []
    for copied, listing in enumerate(looks):
        decision = next_round(copied, listing, marks, frozenset(held), sliced=sliced)
        decided.append(decision)
        if not isinstance(decision, Copy):
            return decided
        if decision.anew:  # a new staging table: an empty journal
            marks.clear()
        held -= set(decision.dropped)
        for unit in decision.unmarked:
            del marks[unit]
        for unit in decision.stale:  # copied as the table was at the look: a later write differs at the next
            marks[unit], held = listing[unit], held | (set() if sliced else {unit})  # slices: no partition
    raise AssertionError(f"no decision to stop or cut over after {len(looks)} looks: {decided}")


def test_a_first_copy_copies_every_partition_nulls_last_then_cuts_over() -> None:
    table: dict[Unit, str] = {NULL: "0", B: "2", A: "1"}
    first, last = rounds([table, table])
    assert first == Copy((A, B, NULL), frozenset(), (), (), anew=False)
    assert last == CutOver()


def test_a_resumed_copy_copies_what_the_stopped_run_left_replacing_what_its_last_chunk_wrote() -> None:
    # A and B journaled; C written by a chunk the kill stopped before its mark.
    table: dict[Unit, str] = {A: "1", B: "2", C: "3", NULL: "0"}
    first, last = rounds([table, table], marks={A: "1", B: "2"}, held={A, B, C})
    assert first == Copy((C, NULL), frozenset({C}), (), (), anew=False)
    assert last == CutOver()


def test_partitions_written_to_during_the_copy_are_copied_again_in_the_next_round() -> None:
    before: dict[Unit, str] = {A: "1", B: "2"}
    during: dict[Unit, str] = {A: "1", B: "2*", C: "3"}  # B written to, C added while the first round copied
    decided = rounds([before, during, during])
    assert decided[1] == Copy((B, C), frozenset({B}), (), (), anew=False)
    assert decided[2] == CutOver()


def test_a_partition_dropped_during_the_copy_is_dropped_from_the_copy_and_unmarked() -> None:
    kept: dict[Unit, str] = {A: "1", C: "3"}
    decided = rounds([{**kept, B: "2"}, kept, kept])
    assert decided[1] == Copy((), frozenset(), (B,), (B,), anew=False)  # nothing to copy, only B to take out
    assert decided[2] == CutOver()


def test_a_partition_gone_that_a_stopped_chunk_wrote_unmarked_or_only_marked_is_taken_out_as_it_is_held() -> None:
    # B copied by a chunk stopped before its mark; C marked, its partition of the copy gone (dropped by hand).
    first = next_round(0, {A: "1"}, {A: "1", C: "3"}, frozenset({A, B}))
    assert first == Copy((), frozenset(), (B,), (C,), anew=False)


def test_writers_that_outlast_the_rounds_stop_the_rewrite_with_what_is_left() -> None:
    looks: list[dict[Unit, str]] = [{A: "1", B: f"{i}"} for i in range(ROUNDS + 1)]  # B written to before every look
    decided = rounds(looks)
    assert [type(d) for d in decided] == [Copy] * ROUNDS + [Stop]
    assert decided[-1] == Stop((B,))


def test_writers_that_pause_before_the_last_look_are_caught_up_with_and_cut_over() -> None:
    looks: list[dict[Unit, str]] = [{A: "1", B: f"{i}"} for i in range(ROUNDS)] + [{A: "1", B: f"{ROUNDS - 1}"}]
    decided = rounds(looks)
    assert [type(d) for d in decided] == [Copy] * ROUNDS + [CutOver]


def test_a_partition_dropped_in_the_last_round_also_stops_the_rewrite() -> None:
    looks: list[dict[Unit, str]] = [{A: "1", B: f"{i}"} for i in range(ROUNDS)] + [{A: "1"}]
    assert rounds(looks)[-1] == Stop(())


def test_the_whole_table_written_to_during_its_copy_is_copied_anew_every_slice() -> None:
    first, again, last = rounds([slices(3, "x"), slices(3, "y"), slices(3, "y")], sliced=True)
    assert first == Copy(tuple(slices(3, "x")), frozenset(), (), (), anew=False)
    assert again == Copy(tuple(slices(3, "y")), frozenset(), (), (), anew=True)
    assert last == CutOver()


def test_the_whole_table_copied_by_a_stopped_run_and_unchanged_cuts_over_at_once() -> None:
    assert rounds([slices(3, "x")], marks=slices(3, "x"), sliced=True) == [CutOver()]


def test_a_resumed_sliced_copy_copies_only_the_slices_left_and_the_one_in_flight_once() -> None:
    table = slices(5, "x")
    units = list(table)
    first, last = rounds([table, table], marks={units[0]: "x", units[1]: "x"}, sliced=True)
    assert first == Copy(tuple(units[2:]), frozenset(), (), (), anew=False)
    assert last == CutOver()


def test_a_sliced_copy_holding_files_no_mark_accounts_for_is_made_anew_never_holding_rows_twice() -> None:
    # Stopped as a slice's files landed, before its mark: its rows cannot be told from the marked slices'.
    table = slices(3, "x")
    decided = next_round(0, table, dict(list(table.items())[:2]), frozenset(), sliced=True, strays=True)
    assert decided == Copy(tuple(table), frozenset(), (), (), anew=True)
    # Every slice marked, then strays (a writer into the staging table): anew too, never cut over.
    assert next_round(0, table, table, frozenset(), sliced=True, strays=True) == Copy(tuple(table), frozenset(), (),
                                                                                         (), anew=True)


def test_slices_of_another_count_than_the_journal_s_make_the_copy_anew() -> None:
    # As a session of other cores would slice a table the journal holds no slice of.
    assert next_round(0, slices(2, "x"), slices(3, "x"), frozenset(), sliced=True) == Copy(
        tuple(slices(2, "x")), frozenset(), (), (), anew=True)


def test_a_resumed_copy_keeps_the_journal_s_slices_whatever_its_session_and_a_changed_table_is_sliced_anew() -> None:
    kept = dict(list(slices(7, "x").items())[:2])
    assert whole(10 << 30, "x", 8, 128 * MiB, kept) == slices(7, "x")  # 7 slices, though 8 cores would make 2
    assert whole(10 << 30, "y", 8, 128 * MiB, kept) == slices(slice_count(10 << 30, 8, 128 * MiB), "y")
    # The whole table marked as one unit, by a copy before slices: no slice of it is kept, and the copy is made anew.
    assert whole(10 << 30, "x", 2, 128 * MiB, {(): "x"}) == slices(5, "x")
    assert next_round(0, slices(5, "x"), {(): "x"}, frozenset(), sliced=True) == Copy(
        tuple(slices(5, "x")), frozenset(), (), (), anew=True)


def test_the_whole_table_is_sliced_into_chunks_of_the_plan_s_bound_and_a_small_one_is_one_slice() -> None:
    most = 2 * COPY_RATE * CHUNK_SECONDS  # on two cores
    for total in (10 << 30, 100 << 30):
        count = slice_count(total, 2, 128 * MiB)
        assert total / count <= most and total / (count - 1) > 2 * 128 * MiB * WAVES, total
    assert slice_count(10 << 30, 2, 128 * MiB) == 5  # a stop loses at most a fifth of this copy
    assert slice_count(1 << 30, 2, 128 * MiB) == 1 and slice_count(0, 2, 128 * MiB) == 1
    assert slice_count(1 << 50, 2, 128 * MiB) == MOST_CHUNKS  # a journal of at most MOST_CHUNKS marks
    assert list(slices(3, "x")) == [("00000/00003",), ("00001/00003",), ("00002/00003",)]
    assert slice_numbers([("00001/00003",), ("00002/00003",)]) == (3, (1, 2))


def test_a_slice_is_selected_by_the_hash_the_checksum_takes_of_each_row_moved() -> None:
    columns = [Filled("id", "bigint", "id", "int"), Filled("tags", "map<string,int>", "tags", "map<string,int>"),
               Filled("note", "string", None, None)]
    assert exp.select("*").from_("moved").where(in_slices(columns, 7, (2, 5))).sql(dialect=DIALECT) == (
        "SELECT * FROM moved WHERE PMOD(XXHASH64(XXHASH64(`id`), XXHASH64(TO_JSON(`tags`)), XXHASH64(`note`)), 7) "
        "IN (2, 5)")


def test_a_table_with_no_partitions_and_an_empty_copy_cuts_over() -> None:
    assert next_round(0, {}, {}, frozenset()) == CutOver()


def test_a_chunk_holds_about_chunk_seconds_of_copying_on_the_cores_whatever_spark_gives_a_task() -> None:
    most = 2 * COPY_RATE * CHUNK_SECONDS  # on two cores
    units: list[Unit] = [(f"{i:04d}",) for i in range(100)]
    sizes = dict.fromkeys(units, 100 * MiB)  # 10 GB
    for split in (128 * MiB, 1 << 30, 1 << 40):  # Spark's default, 1 GiB, 1 TiB
        found = list(chunks(units, sizes, 2, split, sum(sizes.values())))
        assert sum(found, []) == units
        assert max(sum(sizes[u] for u in chunk) for chunk in found) < most + 100 * MiB, split
        assert len(found) > 4  # a stop loses at most a fifth of this copy
    assert task_bytes(128 * MiB) == 128 * MiB  # Spark's default is left as it is: 8 waves of it fit a chunk
    assert task_bytes(1 << 40) == COPY_RATE * CHUNK_SECONDS // WAVES


def test_smaller_tasks_make_smaller_chunks_of_eight_waves() -> None:
    units: list[Unit] = [(f"{i}",) for i in range(40)]
    sizes = dict.fromkeys(units, 10)
    assert [len(c) for c in chunks(units, sizes, 2, 16, 400)] == [26, 14]  # 2 cores x 16 bytes x 8 waves: 256 bytes


def test_a_partition_larger_than_a_chunk_is_a_chunk_of_its_own_and_a_chunk_names_at_most_chunk_units() -> None:
    units = [A, B, C]
    assert list(chunks(units, {A: 10, B: 1 << 40, C: 10}, 2, 128 * MiB, 1 << 40)) == [[A, B], [C]]
    many: list[Unit] = [(f"{i}",) for i in range(CHUNK_UNITS + 1)]
    assert [len(c) for c in chunks(many, dict.fromkeys(many, 0), 2, 128 * MiB, 0)] == [CHUNK_UNITS, 1]


def test_a_table_of_more_than_most_chunks_is_copied_in_chunks_of_a_share_of_it() -> None:
    units: list[Unit] = [(f"{i:05d}",) for i in range(10_000)]
    sizes = dict.fromkeys(units, 1 << 30)  # 10 TiB on two cores
    found = list(chunks(units, sizes, 2, 128 * MiB, sum(sizes.values())))
    assert len(found) == MOST_CHUNKS


def test_the_step_says_how_big_a_chunk_is_and_what_a_stop_loses() -> None:
    have = Table("db", "t", (Column("id", "int"),), (Column("ds", "string"),), data_source=True, version="v1")
    want = replace(have, columns=(Column("id", "bigint"),), version=None)
    by_partition = RewriteTable("db.t", want, have, ("id: int -> bigint",), evolve(have, want, (), type_rule=False),
                                cores=2).to_step()
    assert ("partition by partition, in chunks of at most about 100 s of copying each (2.2 GB on 2 cores; what a stop "
            "loses at most)") in by_partition.notes[0]
    moved = replace(want, columns=(Column("ds", "string"),), partition_columns=(Column("id", "bigint"),))
    evolution = evolve(flat(have), flat(moved), (), type_rule=False)
    whole = RewriteTable("db.t", moved, have, ("partitioned by id",), evolution, cores=2,
                         stored=Stored(10_000_000_000, 40, 12)).to_step()
    assert ("the whole table in slices of its rows (a row's by a hash of its values), at most about 100 s of copying "
            "each (2.2 GB on 2 cores; what a stop loses at most): 5 slices of its 10.0 GB, and compares what the slices "
            "wrote with what the whole copy holds (row counts, a checksum of the rows' values)") in whole.notes[0]
    # Its size or the cores not known: the bound alone.
    unmeasured = RewriteTable("db.t", moved, have, ("partitioned by id",), evolution).to_step()
    assert ("the whole table in slices of its rows (a row's by a hash of its values), at most about 100 s of copying "
            "each (what a stop loses at most), and compares") in unmeasured.notes[0]
