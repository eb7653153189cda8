"""Everything that touches sqlglot: types, view SQL analysis and DDL text."""
