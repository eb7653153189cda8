"""The metastore's Thrift structs, as data, turned into what schemaflow knows of them: no JVM, no server."""
from __future__ import annotations

from schemaflow.catalog.hive.thrift_data import statistics
from schemaflow.model import Stored


def partition(location: str, **parameters: str) -> dict:
    return {"values": [location[-1]], "sd": {"location": location}, "parameters": parameters}


def test_a_partitioned_tables_files_are_what_the_statistics_of_its_partitions_say():
    table = {"partitionKeys": [{"name": "ds"}], "parameters": {"totalSize": "0", "numFiles": "0"}}
    partitions = [partition("/w/t/ds=1", totalSize="1000", numFiles="2"),
                  partition("/w/t/ds=2", totalSize="500", numFiles="1", numRows="7")]
    assert statistics(table, partitions) == (Stored(1500, 3, 2), [])


def test_partitions_that_keep_no_statistics_are_left_for_a_listing_and_counted_as_unknown():
    partitions = [partition("/w/t/ds=1", totalSize="1000", numFiles="2"),
                  partition("/w/t/ds=2"),                                     # none kept
                  partition("/w/t/ds=3", totalSize="0", numFiles="0"),        # what a server records at creation
                  partition("/w/t/ds=4", totalSize="12", numFiles="many")]    # not a number
    assert statistics({}, partitions) == (Stored(1000, 2, 4, unknown=3), ["/w/t/ds=2", "/w/t/ds=3", "/w/t/ds=4"])


def test_an_unpartitioned_table_has_its_own_statistics_or_sparks_byte_count():
    hive = {"sd": {"location": "/w/t"}, "parameters": {"totalSize": "2048", "numFiles": "4"}}
    assert statistics(hive, None) == (Stored(2048, 4, None), [])
    analyzed = {"sd": {"location": "/w/t"}, "parameters": {"numFiles": "0", "spark.sql.statistics.totalSize": "99"}}
    assert statistics(analyzed, None) == (Stored(99, None, None), [])
    assert statistics({"sd": {"location": "/w/t"}, "parameters": {}}, None) == (Stored(0, 0, None, unknown=1), ["/w/t"])
