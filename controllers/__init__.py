"""The pure cores of Caldera's controllers: each kind's state, its `decide`, and the effects it
asks for. Nothing here does I/O or imports Temporal; the workflow shells in `workflows/` run
these cores and carry out their effects."""
