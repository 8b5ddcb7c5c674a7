"""The SchedulerWorkflow's memory: assumed placements and session pacing."""
