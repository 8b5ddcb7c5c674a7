"""Volcano's framework: the session's books, its gang statement, ordering, configuration, close."""
