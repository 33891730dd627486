"""labtest: hardware-in-the-loop test and validation for AI-cluster networks."""

__version__ = "0.1.0"
