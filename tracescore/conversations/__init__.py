"""Conversations live: turns recorded as their traces are scored, conversations assembled when
idle, scored by the ``target: conversation`` bindings, read by the API and the dashboard.

A chat assistant answers each user message in its own trace; what users care about shows only
across those traces. The trace worker records each trace's turn (its primary agent run, when the
trace names a conversation) in the same transaction as the trace's scores
(:mod:`tracescore.store.conversations`); a conversation with no new turn for
``conversations.idle_timeout`` is ready, and :mod:`tracescore.pipeline.conversations` rebuilds it
from its most recent turns' traces and scores it, again whenever a later turn arrives.
"""
