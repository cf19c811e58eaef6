"""The live scoring pipeline: config, sampling and routing, limits, workers (see ``runner``)."""
