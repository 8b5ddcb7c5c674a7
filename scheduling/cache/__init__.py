"""Volcano's cache: cluster objects to a snapshot, and a session's writes and handoffs back."""
