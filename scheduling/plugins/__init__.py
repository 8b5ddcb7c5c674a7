"""Volcano's plugins: predicates, node scores and queue shares, as functions of api types."""
