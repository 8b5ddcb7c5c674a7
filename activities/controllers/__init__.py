"""The controllers' side effects: what `controllers/` decides for Volcano Jobs, batch/v1 Jobs,
CronJobs, JobFlows, the PodGroups of other workloads, Queues and HyperNodes, written to the
apiserver (and, for CronJobs, to Temporal Schedules)."""
