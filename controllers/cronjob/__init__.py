"""Volcano's CronJob controller as a pure core: a Temporal Schedule per CronJob, one Job
per run still due."""
