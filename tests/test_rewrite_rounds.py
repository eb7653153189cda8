"""What each round of a rewrite's copy does (``catalog.rewrite_rounds``), every branch, without a JVM: the first copy,
a resumed one, writers caught up with, writers that outlast the rounds, partitions dropped during the copy (copied or
only marked), the whole table copied anew; chunks bounded by the plan's own rate whatever Spark's task size, and what
the plan's step says of them."""
from __future__ import annotations

from dataclasses import replace

from schemaflow.catalog.rewrite_rounds import (CHUNK_UNITS, MOST_CHUNKS, ROUNDS, WAVES, Copy, CutOver, Stop, Unit,
                                               chunks, next_round, task_bytes)
from schemaflow.model import CHUNK_SECONDS, COPY_RATE, Column, Table
from schemaflow.plan.evolution import evolve
from schemaflow.plan.rewrite import RewriteTable, flat

A: Unit = ("a",)
B: Unit = ("b",)
C: Unit = ("c",)
NULL: Unit = (None,)
WHOLE: Unit = ()
MiB = 1 << 20


def rounds(looks: list[dict[Unit, str]], marks: dict[Unit, str] | None = None,
           held: set[Unit] | None = None) -> list[Copy | CutOver | Stop]:
    """The rounds of a copy that sees the table as ``looks`` says, one look a round, from the journal ``marks`` and the
    partitions ``held`` (a stopped run's), copying as each round decides: what it decided each round."""
    marks, held = dict(marks or {}), set(held or ())
    decided: list[Copy | CutOver | Stop] = []
    for copied, listing in enumerate(looks):
        decision = next_round(copied, listing, marks, frozenset(held))
        decided.append(decision)
        if not isinstance(decision, Copy):
            return decided
        held -= set(decision.dropped)
        for unit in decision.unmarked:
            del marks[unit]
        for unit in decision.stale:  # copied as the table was at the look: a later write differs at the next
            marks[unit], held = listing[unit], held | ({unit} if unit else set())  # the whole table: no partition
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


def test_the_whole_table_written_to_during_its_copy_is_copied_anew() -> None:
    first, again, last = rounds([{WHOLE: "x"}, {WHOLE: "y"}, {WHOLE: "y"}])
    assert first == Copy((WHOLE,), frozenset(), (), (), anew=False)
    assert again == Copy((WHOLE,), frozenset(), (), (), anew=True)
    assert last == CutOver()


def test_the_whole_table_copied_by_a_stopped_run_and_unchanged_cuts_over_at_once() -> None:
    assert rounds([{WHOLE: "x"}], marks={WHOLE: "x"}) == [CutOver()]


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
    whole = RewriteTable("db.t", moved, have, ("partitioned by id",), evolve(flat(have), flat(moved), (),
                                                                             type_rule=False)).to_step()
    assert "the whole table at once (a stop loses the whole copy, made again by the next apply)" in whole.notes[0]
