"""The gang scheduler, pure (no I/O imports), in the shape of Volcano's `pkg/scheduler`.

One session, as vc-scheduler runs it: `cache.objects.snapshot_from_objects` turns what the
session activity read from the cluster cache into a frozen `api.snapshot.Snapshot`;
`actions.registry.run_session` opens a `framework.state.SessionState` over it, runs the
configured actions and closes into an `api.result.SessionResult`; the `cache` planners turn
that into the writes and handoffs the activity carries out.

- `api/`: the data every layer reads: resource vectors (`vectors`), what a pod asks for
  (`requests`), pod and node terms, the snapshot, job counters (`jobs`), the HyperNode tree,
  the result.
- `plugins/`: Volcano's and kube-scheduler's rules as functions of api types: predicates and
  the inter-pod plugins over the session's `podview`, node scores (`scoring`), queue shares
  (`proportion`, `capacity`, `queuerank`), network-topology-aware's binpack.
- `framework/`: the session's books (`state`), the gang `statement`, `ordering`, the session's
  settings (`session_config`) and their file format (`conf`), and session close (`status`).
- `actions/`: enqueue, allocate, backfill, reclaim, preempt, who may be evicted (`victims`)
  and making room on a node (`eviction`), and the runner (`registry`).
- `cache/`: cluster objects to a snapshot, the views the planners read (`observed`), the
  status writes (`writes`), where placements go (`placements`), volume plans (`volumes`) and
  which watch events wake a session (`arrivals`).

Imports run downhill: api ← plugins ← framework ← actions, and cache ← api.
"""
