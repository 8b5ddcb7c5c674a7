"""Volcano's HyperNode controller as a pure core: HyperNodes discovered from node labels."""
