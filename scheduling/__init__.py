"""Pure placement algorithms (enqueue, allocate, backfill, proportion): no I/O imports."""
