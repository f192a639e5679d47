"""Search: full text (stemmed BM25), vectors, fusion, explanations, the search log."""
