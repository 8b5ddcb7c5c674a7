"""Volcano's PodGroup controller as a pure core: PodGroups for pods Caldera did not create."""
