"""Dispatch to worker clusters: their registrations and probes, the copies of dispatched Jobs
made, followed and mirrored back on the manager."""
