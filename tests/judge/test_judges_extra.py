"""LLM judges are an extra (``pip install 'tracescore[judges]'``: litellm doubles the install):
without it the default collector starts and scores with the code scorers, and a config that
asks for a judge is refused at start with the command that adds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import CAPTURES
from tests.support.score_rows import wait_for_scores
from tests.support.server_process import free_port, start_server
from tracescore.config import DEFAULT_SCORERS

JUDGE_CONFIG = """\
judges:
  default: {model: openai/gpt-4o-mini, api_key_env: OPENAI_API_KEY}
scorers:
  - {name: tone, scorer: tone}
  - {name: faithfulness, scorer: faithfulness}
"""

# The command line as if litellm were not installed: ``import litellm`` fails and
# ``importlib.util.find_spec`` finds nothing (a None entry in sys.modules does both).
WITHOUT_LITELLM = (
    "import sys; sys.modules['litellm'] = None; "
    "from tracescore.cli import app; app(prog_name='tracescore')"
)


def test_a_judge_without_litellm_is_refused_at_start_naming_the_extra(tmp_path: Path) -> None:
    (tmp_path / "judge.yaml").write_text(JUDGE_CONFIG)
    for command in (
        ["config", "check", "judge.yaml"],
        [
            "serve",
            "--config",
            "judge.yaml",
            "--db",
            f"sqlite:///{tmp_path / 'x.db'}",
            "--http-port",
            str(free_port()),
            "--grpc-port",
            str(free_port()),
        ],
        [
            "score",
            str(CAPTURES / "strands"),
            "--scorer",
            "faithfulness",
            "--judge",
            "openai/gpt-4o-mini",
        ],
    ):
        result = subprocess.run(
            [sys.executable, "-c", WITHOUT_LITELLM, *command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2, (command, result.stderr)
        assert "Traceback" not in result.stderr and "╭" not in result.stderr
        assert (
            "scorer 'faithfulness' asks an LLM judge, and litellm, which judges call through, "
            "is not installed: pip install 'tracescore[judges]'"
        ) in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_the_default_collector_scores_without_litellm(tmp_path: Path) -> None:
    """Every process of the service (scoring workers and unpackers are spawned, so the block
    is a module on PYTHONPATH they all import first) runs with an ``import litellm`` that fails."""
    blocker = tmp_path / "blocker" / "litellm"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('litellm is not installed')\n")
    env = {
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(blocker.parent), os.environ.get("PYTHONPATH")])
        )
    }
    with start_server(tmp_path / "server", idle_timeout=0.3, env=env) as server:
        demo = subprocess.run(
            [
                sys.executable,
                "-m",
                "tracescore.cli",
                "demo",
                "--endpoint",
                server.base_url,
                "--rate",
                "10/s",
                "--duration",
                "1.5",
                "--seed",
                "3",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )
        assert demo.returncode == 0, demo.stderr
        sent = int(demo.stderr.strip().rsplit("sent ", 1)[1].split()[0])
        rows = wait_for_scores(server.db_url, sent * len(DEFAULT_SCORERS), timeout=60.0)
        output = server.output()
    assert {row.status for row in rows} == {"ok"}
    assert "litellm" not in output, output
