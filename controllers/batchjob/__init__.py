"""Kubernetes' batch/v1 Job controller as a pure core, for Jobs whose managedBy is Caldera."""
