"""Retrieval evaluation: BEIR sets, golden sets for a vault, the linked-pair test."""
