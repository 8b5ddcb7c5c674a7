"""Payloads crossing the Temporal boundary (forwarder signals, update inputs, query results),
one module per workflow kind: `job`, `batchjob`, `queue`, `scheduler`, `podgroup`, `cronjob`,
`jobflow`, and `common` for the `Payload` base and what several kinds hear.

Each module also holds its kind's workflow type and signal names, which histories and the
forwarder store. Nothing is re-exported here: import the kind's module
(`from models.signals import job as job_signals`).
"""
