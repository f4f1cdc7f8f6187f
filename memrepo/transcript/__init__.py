"""A conversation as data: one Turn, one reader, one writer.

``read`` reads a session back from any source (a transcript, chat messages in JSON/JSONL,
stdin) into :class:`~memrepo.transcript.read.Turn` objects; ``messages`` knows the chat
message shapes runtimes use (who speaks, what it says, which tool call it opens or closes);
``render`` is what a transcript's text looks like; ``capture`` writes it: sessions opened,
appended to and closed, and whole conversations from ``importers`` (foreign chat logs);
``session`` keeps an open session's state and lock, ``tail`` writes each turn in one write
and cuts back a torn one, ``recovery`` finds and repairs what a crash left (for doctor).
"""
