"""Volcano's api: the data types every layer of a session reads (vectors, snapshot, result)."""
