"""The graph: edges derived from notes (explicit, type defaults, structure) and, later, signals."""
