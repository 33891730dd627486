"""Capabilities: the typed Protocols and records suites are written against."""
