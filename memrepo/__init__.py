"""memrepo: a plain git repository as the long-term memory of an AI agent."""

__version__ = "0.1.0"
