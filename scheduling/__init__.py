"""Pure placement algorithms (enqueue, allocate, backfill, reclaim, preempt): no I/O imports.

One session, as vc-scheduler runs it: `objects.snapshot_from_objects` turns what the snapshot
activity listed into a frozen `snapshot.Snapshot`; `actions.run_session` runs the configured
actions over a `state.SessionState` and returns a `result.SessionResult`. The rules live in
`resources` (vectors), `requests` (what a pod asks for), `predicates` and `scoring` (nodes),
`jobs` (gang counters), `proportion` (queue shares), `ordering`, `statement` (gang
transactions), `victims` and `eviction` (who may be evicted, and making room on a node) and one
module per action; `status` closes the session.
"""
