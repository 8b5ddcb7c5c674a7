"""Volcano's queue controller as a pure core: open, close and the queue hierarchy."""
