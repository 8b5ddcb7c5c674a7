"""The gang scheduler's side effects: its informer cache (`informer`), one session over it
(`sessions`), and carrying the session's decisions out: volumes and nodes bound, DRA claims
made ready, victims evicted, metrics and backlogs reported."""
