"""Rebuild agent runs from spans of any convention (one module per convention)."""
