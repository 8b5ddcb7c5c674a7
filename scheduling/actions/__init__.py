"""Volcano's actions: enqueue, allocate, backfill, reclaim, preempt, and the session runner."""
