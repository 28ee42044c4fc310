"""qkv's version, in a module of its own so that the core can read it without importing the package."""

__version__ = "0.1.0"
