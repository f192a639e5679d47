"""Text analysis shared by the importer and the search: words, language, Snowball stems, stop
words, the model-token estimate, name keys and the embedded passage. Nothing here touches the
database or a model; the layer above everything but the configuration.
"""
