"""The embedded dev stack: local control plane + Temporal dev server, started by PID."""
