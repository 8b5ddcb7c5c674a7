"""The chaos soak: a mixed workload on the real stack while processes are killed, the
Temporal server and the apiserver restarted, pods evicted and a node removed; then the
invariants that say nothing was lost, duplicated or left stuck."""
