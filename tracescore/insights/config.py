"""The ``insights:`` section: which runs count as failed, how they are grouped and named, and
how often the service groups them.

A leaf module apart from the grouping code, so the top-level config composes it without
importing NumPy and SciPy.
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import Field

from tracescore.judge.config import JudgeConfig
from tracescore.settings import Duration, Problem, Section


class FailedRunsConfig(Section):
    """What makes a run failed: any of these marks it."""

    below_threshold: bool = True
    """A score its binding labelled ``fail`` (below the binding's ``threshold``), or one its
    scorer labelled with what failed (the ``consistency`` scorer: the failed checks' names,
    anything but ``ok``)."""
    scorer_errors: bool = True
    """A scoring that failed (stored ``error``: the judge could not be reached, or the run
    could not be read)."""
    feedback_labels: list[str] = Field(
        default_factory=lambda: ["fail", "bad", "wrong", "incorrect", "negative", "thumbs_down"]
    )
    """Human feedback with one of these labels (empty: labels mark nothing)."""
    feedback_below: float | None = 0.5
    """Human feedback whose value is below this (None: values mark nothing)."""


class InsightsConfig(Section):
    """Grouping of failed runs into failure modes (see docs/insights.md)."""

    enabled: bool = True
    """Run passes in the service (``tracescore insights`` runs one on demand either way)."""
    interval: Duration = 900.0
    """Time between the starts of two passes (one replica at a time runs them, under a lease)."""
    window: Duration = 86400.0
    """A pass groups the runs that failed in this much time before it."""
    trend_buckets: int = Field(12, ge=2, le=200)
    """Parts of the window a group's trend is counted in."""
    failed: FailedRunsConfig = Field(default_factory=FailedRunsConfig)
    max_runs: int = Field(20_000, ge=10, le=1_000_000)
    """The most failed runs one pass reads: above it, a deterministic sample of this many (the
    same runs for the same window; the failure modes page says how many of how many), so
    memory is bounded however many runs failed: at the default, a pass's process stays under
    300 MB resident, imports included."""
    cluster_sample: int = Field(2_000, ge=10, le=20_000)
    """Runs the hierarchical clustering itself sees (its memory grows with the square of it);
    the others join the nearest group found, or none."""
    distance_threshold: float | None = Field(None, gt=0, lt=2)
    """Cosine distance at which two groups stop being merged (average linkage): lower makes
    more, tighter groups. Unset: each pass chooses it from its runs (the cut whose groups have
    the best silhouette)."""
    signature_weight: float = Field(1.0, ge=0, le=1)
    """How much the runs' failure signatures count (which scorers failed them with which labels,
    the ``consistency`` checks failed, failed tool calls' error classes, the answer's language,
    refusal, apology, leak)."""
    text_weight: float = Field(0.5, ge=0, le=1)
    """How much the failure's text counts (answer, tool errors, scorers' reasons, with
    entities and numbers masked)."""
    request_weight: float = Field(0.15, ge=0, le=1)
    """How much the user's requests count: runs that failed alike on different requests group
    together, runs on one topic that failed differently do not."""
    merge_similarity: float = Field(0.9, gt=0, le=1)
    """Groups whose mean signatures have at least this cosine are one group (a mode its wording
    split)."""
    min_group_size: int = Field(5, ge=2)
    """Groups with fewer runs are left out (those runs fail in ways of their own)."""
    match_similarity: float = Field(0.5, gt=0, le=1)
    """Least similarity (cosine of their terms, or the share of runs in common, whichever is
    higher) for a group to keep a previous pass's id."""
    examples: int = Field(5, ge=1, le=50)
    """Example runs kept per group for the pages (and shown to the naming judge)."""
    embedding_model: str | None = None
    """A litellm embedding model (``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``,
    ``openai/<name>`` with ``embedding_api_base``) to group by meaning instead of by terms."""
    embedding_api_base: str | None = None
    embedding_api_key_env: str | None = None
    """Environment variable holding the embedding API key."""
    embedding_batch: int = Field(256, ge=1)
    """Texts per embedding request."""
    judge: str | None = None
    """A name of ``judges`` to name each group (one call per group, cached); unset: groups are
    named by their distinctive terms."""
    leader_lease: Duration = 600.0
    """How long the grouping replica's lease lasts unrenewed; another replica takes over after."""

    def embedding(self) -> JudgeConfig | None:
        """The embedding model as a litellm connection, or None when grouping by terms."""
        if self.embedding_model is None:
            return None
        return JudgeConfig(
            model=self.embedding_model,
            api_base=self.embedding_api_base,
            api_key_env=self.embedding_api_key_env,
        )

    def problems(self, judges: Collection[str]) -> list[Problem]:
        """The judge that names the groups, when one is set, is one of ``judges``."""
        if self.judge is not None and self.judge not in judges:
            return [(("insights", "judge"), f"no judge named {self.judge!r} in judges")]
        return []
