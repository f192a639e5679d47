"""Knowledge items: the proposal format, the one writer, callouts, consolidation, gaps and their cards."""
