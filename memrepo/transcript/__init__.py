"""A conversation as data: one Turn, one reader, one writer.

``read`` parses a transcript into turns; ``messages`` reads chat message lists (JSON);
``capture`` opens, appends to and closes sessions; ``importers`` turn foreign chat logs
into transcripts.
"""
