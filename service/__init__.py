"""Process plumbing shared by the worker, the forwarder and the CLI."""
