"""Local models over llama.cpp: building the GGUF, embedding, reranking.

llama_cpp is imported lazily inside functions, never at module level.
"""
