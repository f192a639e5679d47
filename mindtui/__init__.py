"""mindtui: a local-first second brain for Obsidian-style markdown vaults."""

__version__ = "0.1.0"
