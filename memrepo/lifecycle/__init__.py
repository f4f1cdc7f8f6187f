"""Jobs that rewrite knowledge from transcripts: extract, condense, prune, reconstruct,
flush, the scheduler that runs them, and the tags that mark their states."""
