"""Jobs that rewrite knowledge from transcripts: extract, condense, prune, reconstruct,
flush, the scheduler that runs them, and the tags that mark their states; with what they
share: a ``plan`` (write, ``git mv``, commit), the MEMORY.md ``cap``, and the ``journal``
(how a day starts, and the bullet writer ``memory remember`` uses)."""
