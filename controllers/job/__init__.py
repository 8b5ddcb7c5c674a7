"""Volcano's job controller as a pure core: the phase x action table, policies, actions."""
