"""The one list of table parameters others write (``schemaflow/sql/table_parameters.py``), read its two ways."""
from __future__ import annotations

from schemaflow.sql.table_parameters import RESERVED_KEYS, why_reserved, written_by_others


def test_a_declaration_is_refused_a_reserved_key_in_any_case_and_told_what_to_do() -> None:
    assert why_reserved("EXTERNAL") == why_reserved("external") == (
        "Hive reads it to tell an external table: declare 'external: true' instead")
    assert why_reserved("NUMPARTITIONS") == RESERVED_KEYS["numPartitions"]
    assert why_reserved("Spark.SQL.sources.provider").startswith("Spark keeps a table's provider")
    assert why_reserved("schemaflow.version") == "schemaflow writes the 'schemaflow.' properties itself"
    assert why_reserved("owner") is None and why_reserved("spark.sqlx") is None


def test_the_live_reader_leaves_out_a_key_as_its_owner_writes_it() -> None:
    assert all(written_by_others(key) for key in RESERVED_KEYS)
    assert written_by_others("spark.sql.sources.schema") and written_by_others("last_modified_by")
    # Spelt otherwise, it is a property someone else wrote: read, and planned against the declaration.
    assert not written_by_others("External") and not written_by_others("owner")
