"""Pydantic v2 models: the Volcano API types and Caldera's payloads. Pure: no I/O imports."""
