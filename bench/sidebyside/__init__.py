"""Side by side: the same workload on Kubernetes' own controllers, on Caldera and on Volcano,
in one run on one stack (not a test; `python -m bench.sidebyside --help`)."""
