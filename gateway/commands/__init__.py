"""Chat commands: one `CommandSpec` per command in one table (`table.py`), everything else derived from it."""
