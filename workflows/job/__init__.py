"""Volcano's job controller: the pure core (phase x action table, policies, reconcile) and
its workflow shell."""
