"""`python -m bench.estimate`: how good the start-time estimates are (Issue 38).

A stream of one-pod jobs of varied run lengths through one queue that holds a few at a time, on
the side-by-side stack; each job's first estimated start (the SchedulerWorkflow's
`pending_jobs` answer, read every second) against when its pod actually started. The report
gives the median and 90th percentile of |estimate - actual| (`accuracy.py`), with how many jobs
had an estimate and how far ahead it was given.
"""
