"""Dispatch to worker clusters against the single-cluster path, and failover: see README.md."""
