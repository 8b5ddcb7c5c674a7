"""The `caldera` command."""
