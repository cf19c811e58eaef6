"""The ``consistency`` scorer (:mod:`.scorer`) and its checks."""
