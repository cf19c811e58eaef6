"""Failure modes: the failed runs of a window grouped by what they share, named, tracked."""
