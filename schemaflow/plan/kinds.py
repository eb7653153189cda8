"""The kinds a plan is written in: of steps, of what each step does to its object, and of actions.

A step's kind names the change a reviewer reads ("create_table", "alter_columns"); an action's
kind names what the executor runs ("create_table", "set_parameters"). Both are written into plan JSON and
a step's kind into the claims an apply leaves on objects, so their values never change. Each step
kind declares its ``Effect`` in one table: the markers and counts a reader scans are derived from
it, not from the spelling of the kind.
"""
from __future__ import annotations

from enum import StrEnum
from collections.abc import Mapping


class StepKind(StrEnum):
    CREATE_DATABASE = "create_database"
    SET_DATABASE_PROPERTIES = "set_database_properties"
    CREATE_TABLE = "create_table"
    DROP_TABLE = "drop_table"
    ADD_COLUMNS = "add_columns"
    ALTER_COLUMNS = "alter_columns"
    SET_TABLE_COMMENT = "set_table_comment"
    SET_COLUMN_COMMENTS = "set_column_comments"
    SET_STORAGE = "set_storage"
    ALTER_ICEBERG_TABLE = "alter_iceberg_table"  # an Iceberg table's schema, spec, sort order, comment: one commit
    CONVERT_TO_ICEBERG = "convert_to_iceberg"  # a Parquet table's files registered in a new Iceberg table
    ALTER_DELTA_TABLE = "alter_delta_table"  # a Delta table's columns, comments, properties: the engine's statements
    DELTA_PROTOCOL = "delta_protocol"  # a Delta table's protocol raised, or a table feature turned on, before its changes
    REWRITE_TABLE = "rewrite_table"  # the rows copied into a new definition of the table, verified, swapped in
    RESTORE_TABLE = "restore_table"  # the backup a rewrite kept swapped back in under the table's name (no copy)
    REGISTER_TABLE = "register_table"  # an Iceberg table the catalog moved from holds, adopted by its metadata file
    FORGET_ENTRY = "forget_entry"  # the entry of a moved object in the catalog moved from, dropped (no file touched)
    CREATE_VIEW = "create_view"
    REPLACE_VIEW = "replace_view"
    DROP_VIEW = "drop_view"
    VIEW_PARTITIONS = "view_partitions"  # adds and drops a partitioned view's partitions
    UNSUPPORTED = "unsupported"          # a change that cannot run in place (always blocked)
    SET_PROPERTIES = "set_properties"    # an object's stamp, on its own when no other step of it comes just before
    # A change to schemaflow.yaml (plan.settings_changes): reviewed like the rest, it runs nothing itself.
    CHANGE_SETTINGS = "change_settings"


class ObjectType(StrEnum):
    """What a step's object is: written into plan JSON and an object's history, so its values never change."""
    DATABASE = "database"
    TABLE = "table"
    VIEW = "view"
    SETTINGS = "settings"  # schemaflow.yaml (``StepKind.CHANGE_SETTINGS``)


class Effect(StrEnum):
    """What a step does to its object, as a reader scans a plan for it."""

    CREATE = "create"
    CHANGE = "change"
    DROP = "drop"


EFFECTS: Mapping[StepKind, Effect] = {
    StepKind.CREATE_DATABASE: Effect.CREATE,
    StepKind.SET_DATABASE_PROPERTIES: Effect.CHANGE,
    StepKind.CREATE_TABLE: Effect.CREATE,
    StepKind.DROP_TABLE: Effect.DROP,
    StepKind.ADD_COLUMNS: Effect.CHANGE,
    StepKind.ALTER_COLUMNS: Effect.CHANGE,
    StepKind.SET_TABLE_COMMENT: Effect.CHANGE,
    StepKind.SET_COLUMN_COMMENTS: Effect.CHANGE,
    StepKind.SET_STORAGE: Effect.CHANGE,
    StepKind.ALTER_ICEBERG_TABLE: Effect.CHANGE,
    StepKind.CONVERT_TO_ICEBERG: Effect.CHANGE,
    StepKind.ALTER_DELTA_TABLE: Effect.CHANGE,
    StepKind.DELTA_PROTOCOL: Effect.CHANGE,
    StepKind.REWRITE_TABLE: Effect.CHANGE,
    StepKind.RESTORE_TABLE: Effect.CHANGE,
    StepKind.REGISTER_TABLE: Effect.CREATE,
    StepKind.FORGET_ENTRY: Effect.DROP,
    StepKind.CREATE_VIEW: Effect.CREATE,
    StepKind.REPLACE_VIEW: Effect.CHANGE,  # in place, under its name: the summary counts re-created views apart
    StepKind.DROP_VIEW: Effect.DROP,
    StepKind.VIEW_PARTITIONS: Effect.CHANGE,
    StepKind.UNSUPPORTED: Effect.CHANGE,
    StepKind.SET_PROPERTIES: Effect.CHANGE,
    StepKind.CHANGE_SETTINGS: Effect.CHANGE,
}

VIEW_DEFINITIONS = frozenset({StepKind.CREATE_VIEW, StepKind.REPLACE_VIEW})  # the steps that run a view's SQL


class ActionKind(StrEnum):
    """What an action is, as plan JSON names it (its ``action`` field); each action class declares its own."""

    CREATE_TABLE = "create_table"
    ADD_COLUMNS = "add_columns"
    SET_TABLE_COMMENT = "set_table_comment"
    SET_COLUMN_COMMENTS = "set_column_comments"
    DROP_TABLE = "drop_table"
    CREATE_VIEW = "create_view"
    DROP_VIEW = "drop_view"  # through the engine, or (where the engine would analyse its SQL) as a catalog entry
    ADD_DATABASE = "add_database"
    SET_DATABASE_PARAMETERS = "set_database_parameters"
    SET_PARAMETERS = "set_parameters"
    SET_COLUMNS = "set_columns"
    SET_STORAGE = "set_storage"
    PARTITION_VIEW = "partition_view"
    KEEP_VIEW_PARTITIONS = "keep_view_partitions"
    CHANGE_VIEW_PARTITIONS = "change_view_partitions"
    ICEBERG_COMMIT = "iceberg_commit"
    DELTA_CREATE = "delta_create"  # CREATE TABLE ... USING delta, through the engine
    DELTA_ALTER = "delta_alter"    # a Delta table's changes, through the engine, on top of the log version read
    REWRITE_ROWS = "rewrite_rows"
    RESTORE_BACKUP = "restore_backup"
    REGISTER_TABLE = "register_table"  # a table's current metadata file adopted by the catalog (moving catalogs)
    FORGET_ENTRY = "forget_entry"  # an entry dropped from the catalog moved from, its files kept
    CHECK_LIVE_VIEWS = "check_live_views"  # the live views a step has Spark analyse, checked to hold the SQL planned
