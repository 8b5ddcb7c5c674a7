"""Volcano's JobFlow controller (and the JobTemplate status it feeds) as a pure core."""
