"""The vault: scanning, parsing Obsidian markdown, chunking, resolving links, importing."""
