"""The conversation scorers against the scripted judge: DeepEval's verdict → score formulas on
real multi-turn conversations, what the judge is shown, and how failures are reported.

Every judge call goes over real HTTP through litellm to ``tests.support.judge_server``; scripts answer
by the step's schema title, and reason steps get the server's default text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.conversations import CONCIERGE, conversation
from tests.support.judge_server import JudgeServer, error_reply, json_reply
from tests.support.paths import CAPTURES, FIXTURES
from tests.support.scorer_names import judge_scorer_names
from tracescore.cli import app
from tracescore.config import ConfigError, parse_config
from tracescore.judge import JudgeConfig, LiteLLMJudge
from tracescore.offline.conversations import by_conversation
from tracescore.offline.inputs import read_runs
from tracescore.scorers import registry
from tracescore.scorers.base import scorer
from tracescore.scorers.conversation import (
    create_conversation_completeness_scorer,
    create_conversation_relevancy_scorer,
    create_knowledge_retention_scorer,
    create_role_adherence_scorer,
)
from tracescore.scorers.llm.shown_prompts import EXAMPLE_CONVERSATION, example_scorer, shown_prompts
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.utils import run_input_text, run_output_text

# The capture scenario of tests/fixtures/captures/_make/turns.py, with the agent's memory intact
# and then degraded (it forgets the city and the name it was told in turn 1).
ADA = conversation(
    ("Hi, my name is Ada and I live in Lyon.", "Nice to meet you, Ada! How can I help you today?"),
    (
        "Can you recommend a museum in my city?",
        "In Lyon, the Musee des Confluences is a great choice.",
    ),
    ("What is my name?", "Your name is Ada, and you live in Lyon."),
)
ADA_FORGOTTEN = conversation(
    ("Hi, my name is Ada and I live in Lyon.", "Nice to meet you, Ada! How can I help you today?"),
    ("Can you recommend a museum in my city?", "Which city do you live in?"),
    ("What is my name?", "I'm sorry, I don't know your name."),
)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


@pytest.fixture
def judge(server: JudgeServer) -> LiteLLMJudge:
    """A judge on the scripted server, without a verdict cache so tests can re-script a step."""
    return LiteLLMJudge(
        JudgeConfig(
            model="openai/gpt-4o-mini",
            api_base=server.base_url,
            backoff_base=0.01,
            timeout=10,
            cache=False,
        )
    )


def prompts_with(server: JudgeServer, marker: str) -> list[str]:
    return [r["messages"][-1]["content"] for r in server.requests if marker in str(r)]


def verdicts(*pairs: tuple[int, str], reason: str = "r") -> dict[str, Any]:
    return {
        "verdicts": [
            {"turn": turn, "verdict": verdict, "reason": reason} for turn, verdict in pairs
        ]
    }


# ----------------------------------------------------------------------------- knowledge retention


async def test_knowledge_retention_counts_answers_without_attrition(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script(
        "UserFacts",
        json_reply(
            {
                "facts": [
                    {"turn": 1, "fact": "the user's name is Ada"},
                    {"turn": 1, "fact": "the user lives in Lyon"},
                ]
            }
        ),
    )
    server.script("RetentionVerdicts", json_reply(verdicts((1, "no"), (2, "yes"), (3, "yes"))))
    result = await create_knowledge_retention_scorer(model=judge).run(ADA_FORGOTTEN)
    assert result.status == "ok" and result.score == 0.33  # 1 of 3 answers kept the facts
    assert result.reason == "A scripted reason."
    prompt = prompts_with(server, "RetentionVerdicts")[0]
    assert "For each of turns 1, 2, 3," in prompt
    assert "[0] turn 1: the user's name is Ada" in prompt
    assert (
        "Turn 2\nuser: Can you recommend a museum in my city?\nassistant: Which city do you live in?"
        in prompt
    )
    reason = prompts_with(server, "The score is 0.33 because")[0]
    assert "turn 2: yes: r" in reason
    ok = await create_knowledge_retention_scorer(model=judge, scale=10).run(ADA)
    assert ok.score == 3.33  # same scripted verdicts, scaled: the formula, not the text, decides


async def test_strict_mode_is_all_or_nothing_as_deepevals(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    """Issue 32 (8): DeepEval's ``strict_mode`` (1 for a perfect conversation, else 0)."""
    server.script(
        "UserFacts", json_reply({"facts": [{"turn": 1, "fact": "the user's name is Ada"}]})
    )
    server.script("RetentionVerdicts", json_reply(verdicts((1, "no"), (2, "no"), (3, "yes"))))
    assert (await create_knowledge_retention_scorer(model=judge).run(ADA)).score == 0.67
    assert (await create_knowledge_retention_scorer(model=judge, strict=True).run(ADA)).score == 0.0
    server.script("RetentionVerdicts", json_reply(verdicts((1, "no"), (2, "no"), (3, "no"))))
    assert (
        await create_knowledge_retention_scorer(model=judge, strict=True, scale=5).run(ADA)
    ).score == 5
    server.script("TurnRelevancyVerdicts", json_reply(verdicts((1, "yes"), (2, "yes"), (3, "no"))))
    relevancy = registry.get("conversation-relevancy").factory(model=judge, strict=True)
    assert (await relevancy.run(ADA)).score == 0.0


async def test_knowledge_retention_judges_only_answers_after_a_fact(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    chat = conversation(
        ("Hello!", "Hi, how can I help?"),
        ("I'm allergic to peanuts.", "Noted."),
        ("Suggest a snack.", "Try a peanut butter cookie."),
    )
    server.script(
        "UserFacts",
        json_reply(
            {
                "facts": [
                    {"turn": 2, "fact": "the user is allergic to peanuts"},
                    {"turn": 9, "fact": "a turn the conversation does not have"},
                ]
            }
        ),
    )
    server.script("RetentionVerdicts", json_reply(verdicts((3, "yes"), (2, "no"), (2, "yes"))))
    result = await create_knowledge_retention_scorer(model=judge).run(chat)
    assert (
        result.score == 0.5
    )  # turns 2 and 3 judged (turn 1 precedes every fact); the repeat ignored
    assert "For each of turns 2, 3," in prompts_with(server, "RetentionVerdicts")[0]


async def test_knowledge_retention_without_facts_is_not_scorable(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("UserFacts", json_reply({"facts": []}))
    result = await create_knowledge_retention_scorer(model=judge).run(
        conversation(("Hi", "Hello!"))
    )
    assert result.status == "not_scorable" and "no facts" in str(result.reason)
    assert result.failed_step == "analyze" and server.count == 1  # no verdicts asked for


async def test_a_verdict_missing_for_a_judged_turn_is_an_error(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script(
        "UserFacts", json_reply({"facts": [{"turn": 1, "fact": "the user's name is Ada"}]})
    )
    server.script("RetentionVerdicts", json_reply(verdicts((1, "no"), (3, "no"))))
    result = await create_knowledge_retention_scorer(model=judge).run(ADA)
    assert result.status == "error" and result.score is None and result.failed_step == "analyze"
    # The judge was told which turn it left out once (issue 32), then the step failed.
    assert "also after one repair attempt: it gives no verdict for turn 2" in (result.error or "")
    assert len(prompts_with(server, "RetentionVerdicts")) == 2


# ----------------------------------------------------------------------------- completeness


async def test_completeness_is_the_share_of_satisfied_intentions(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script(
        "UserIntentions",
        json_reply(
            {"intentions": ["get a museum recommendation in Lyon", "be reminded of their name"]}
        ),
    )
    server.script(
        "IntentionVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"verdict": "yes", "reason": "turn 2"},
                    {"verdict": " No", "reason": "turn 3"},
                ]
            }
        ),
    )
    result = await create_conversation_completeness_scorer(model=judge).run(ADA_FORGOTTEN)
    assert result.status == "ok" and result.score == 0.5
    assert "[1] be reminded of their name" in prompts_with(server, "IntentionVerdicts")[0]
    assert (
        "be reminded of their name -> not satisfied: turn 3"
        in prompts_with(server, "The score is 0.5 because")[0]
    )


async def test_completeness_counts_every_verdict_but_no_and_scores_no_intentions_full(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("UserIntentions", json_reply({"intentions": ["a", "b", "c"]}))
    server.script(
        "IntentionVerdicts",
        json_reply({"verdicts": [{"verdict": "yes"}, {"verdict": "unsure"}, {"verdict": "no"}]}),
    )
    assert (await create_conversation_completeness_scorer(model=judge).run(ADA)).score == 0.67
    server.script("UserIntentions", json_reply({"intentions": []}))
    server.script("IntentionVerdicts", json_reply({"verdicts": []}))
    assert (await create_conversation_completeness_scorer(model=judge, scale=5).run(ADA)).score == 5
    server.script("UserIntentions", json_reply({"intentions": ["a", "b"]}))
    short = await create_conversation_completeness_scorer(model=judge).run(ADA)
    assert short.status == "error" and short.failed_step == "analyze"
    assert "it has 0 verdicts for 2 intentions: give exactly 2" in (short.error or "")


# ----------------------------------------------------------------------------- role adherence


async def test_role_adherence_counts_answers_out_of_role_once(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    chat = conversation(
        ("Hey there!", "Ah, greetings, traveller! Though my magic is not all that great..."),
        ("Show me what you've got!", "That spark was meant to be a dragon. Still practising."),
        ("Something else?", "I'm the greatest wizard ever! No one can match my power!"),
        ("Wow.", "Sorry, that was not like me. My spells are modest."),
        system="You are a humble wizard who doubts his own magic.",
    )
    server.script(
        "OutOfCharacterTurns",
        json_reply(
            {
                "verdicts": [
                    {"turn": 3, "reason": "boasts"},
                    {"turn": 3, "reason": "again"},
                    {"turn": 7, "reason": "no such turn"},
                ]
            }
        ),
    )
    result = await create_role_adherence_scorer(model=judge).run(chat)
    assert result.status == "ok" and result.score == 0.75  # (4 - 1) / 4
    prompt = prompts_with(server, "OutOfCharacterTurns")[0]
    assert "<role>\nYou are a humble wizard who doubts his own magic.\n</role>" in prompt
    given = await create_role_adherence_scorer(model=judge, role="A pirate captain").run(chat)
    assert (
        given.score == 0.75
        and "<role>\nA pirate captain\n</role>" in prompts_with(server, "OutOfCharacterTurns")[-1]
    )


async def test_role_adherence_without_a_role_is_not_scorable(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    result = await create_role_adherence_scorer(model=judge).run(
        conversation(("Hi", "Hello"), system=None)
    )
    assert result.status == "not_scorable" and "no role to adhere to" in str(result.reason)
    assert server.count == 0
    with pytest.raises(ValueError, match="role must not be empty"):
        create_role_adherence_scorer(model=judge, role=" ")


# ----------------------------------------------------------------------------- relevancy


async def test_relevancy_judges_each_answer_against_its_window(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    chat = conversation(
        ("Hi!", "Hello! What can I do for you?"),
        ("I've a sore throat, what should I take?", "Honey in warm water soothes it."),
        ("It's worse at night.", "Isn't it a nice day today?"),
        ("Any other tip?", "Sleep with your head raised a little."),
    )
    server.script(
        "TurnRelevancyVerdicts", json_reply(verdicts((1, "yes"), (2, "yes"), (3, "no"), (4, "yes")))
    )
    result = await create_conversation_relevancy_scorer(model=judge, window_size=2).run(chat)
    assert result.status == "ok" and result.score == 0.75
    prompt = prompts_with(server, "TurnRelevancyVerdicts")[0]
    assert (
        "turn 1: window turn 1\nturn 2: window turns 1-2\nturn 3: window turns 2-3\nturn 4: window turns 3-4"
        in prompt
    )
    await create_conversation_relevancy_scorer(model=judge).run(chat)
    assert (
        "turn 4: window turns 2-4" in prompts_with(server, "TurnRelevancyVerdicts")[-1]
    )  # default window: 3
    with pytest.raises(ValueError, match="window_size must be at least 1"):
        create_conversation_relevancy_scorer(model=judge, window_size=0)


async def test_turns_without_an_answer_are_not_judged(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    """A turn whose run failed before answering has nothing to judge for relevancy or role."""
    chat = conversation(
        ("Hi", "Hello!"), ("Book a table", ""), ("Hello?", "Sorry, what did you need?")
    )
    server.script("TurnRelevancyVerdicts", json_reply(verdicts((1, "yes"), (3, "yes"))))
    result = await create_conversation_relevancy_scorer(model=judge).run(chat)
    assert result.score == 1.0
    assert (
        "Turn 2\nuser: Book a table\nassistant: (no answer)"
        in prompts_with(server, "TurnRelevancyVerdicts")[0]
    )
    assert "turn 2:" not in prompts_with(server, "TurnRelevancyVerdicts")[0].split("<windows>")[1]


# ----------------------------------------------------------------------------- shared behaviour


async def test_cut_turns_are_summarised_for_the_judge(
    server: JudgeServer, judge: LiteLLMJudge
) -> None:
    chat = conversation(
        ("What is my name?", "Your name is Ada."),
        summary="12 earlier turns: the user, Ada from Lyon, planned a weekend.",
    )
    server.script("OutOfCharacterTurns", json_reply({"verdicts": []}))
    result = await create_role_adherence_scorer(model=judge).run(chat)
    assert result.score == 1.0
    prompt = prompts_with(server, "OutOfCharacterTurns")[0]
    assert prompt.index("<earlier_turns_summary>\n12 earlier turns") < prompt.index(
        "<conversation>\nTurn 1"
    )


@pytest.mark.parametrize(
    "name",
    [
        "conversation-completeness",
        "knowledge-retention",
        "role-adherence",
        "conversation-relevancy",
    ],
)
async def test_a_judge_error_is_an_errored_score_with_the_reason(
    name: str, server: JudgeServer, judge: LiteLLMJudge
) -> None:
    server.script("gpt-4o-mini", error_reply(400, message="context length exceeded"))
    result = await registry.get(name).factory(model=judge).run(ADA)
    assert result.status == "error" and result.score is None
    assert "context length exceeded" in str(result.error) and result.failed_step in (
        "preprocess",
        "analyze",
    )


@pytest.mark.parametrize(
    "name",
    [
        "conversation-completeness",
        "knowledge-retention",
        "role-adherence",
        "conversation-relevancy",
    ],
)
async def test_a_lone_run_is_not_scorable_by_a_conversation_scorer(
    name: str, server: JudgeServer, judge: LiteLLMJudge
) -> None:
    run = ADA.turns[0].run
    assert run is not None
    result = await registry.get(name).factory(model=judge).run(run)
    assert result.status == "not_scorable" and "target: conversation" in str(result.reason)
    assert server.count == 0


def test_registry_lists_the_conversation_scorers_with_options() -> None:
    expected = {
        "conversation-completeness": {"scale", "strict"},
        "knowledge-retention": {"scale", "strict"},
        "role-adherence": {"scale", "role", "strict"},
        "conversation-relevancy": {"scale", "window_size", "strict"},
    }
    for name, options in expected.items():
        entry = registry.get(name)
        assert entry.uses_judge and entry.conversation and entry.higher_is_better
        assert {o.name for o in entry.options()} == options
    assert registry.get("conversation-relevancy").factory(model="openai/gpt-4o-mini", windowSize=5)
    with pytest.raises(ValueError, match="window_size"):
        registry.get("conversation-relevancy").factory(
            model="openai/gpt-4o-mini", window_size="wide"
        )
    assert not registry.get("faithfulness").conversation


# ----------------------------------------------------------------------------- code and custom scorers


def test_a_code_scorer_sees_user_messages_as_input_and_answers_as_output() -> None:
    run = ScorerRun.of(ADA)
    assert run.conversation is ADA and (run.trace_id, run.span_id) == (
        ADA.turns[2].trace_id,
        ADA.turns[2].span_id,
    )
    assert run_input_text(run.input) == (
        "Hi, my name is Ada and I live in Lyon., Can you recommend a museum in my city?, What is my name?"
    )
    assert run_output_text(run.output).endswith("Your name is Ada, and you live in Lyon.")
    assert run.input["systemMessages"][0]["content"] == CONCIERGE
    keywords = registry.get("keyword-coverage").factory().run_sync(ADA)
    # The user's keywords of all three turns against all three answers: ada, live, lyon found;
    # recommend, museum, city not ("Musee" is not "museum").
    assert keywords.status == "ok" and keywords.score == 0.5
    assert keywords.preprocess_step_result["referenceKeywords"] == [
        "ada",
        "live",
        "lyon",
        "recommend",
        "museum",
        "city",
    ]


def test_a_custom_scorer_gets_the_typed_turns() -> None:
    @scorer(id="asked-twice", description="Share of user messages that repeat an earlier one")
    def asked_twice(run: ScorerRun) -> tuple[float, str]:
        assert run.conversation is not None
        seen: set[str] = set()
        repeats = 0
        for turn in run.conversation.turns:
            repeats += turn.user.lower() in seen
            seen.add(turn.user.lower())
        return repeats / len(
            run.conversation.turns
        ), f"{repeats} repeated of {len(run.conversation.turns)}"

    chat = conversation(
        ("Where is my order?", "Checking."), ("Where is my order?", "Still checking.")
    )
    result = asked_twice.run_sync(chat)
    assert result.status == "ok" and result.score == 0.5 and result.reason == "1 repeated of 2"


DEEPEVAL_RULES = {
    "conversation-completeness": (
        "never merge them into one",
        "Acknowledging a request, promising to do it or asking the user to wait is not",
    ),
    "knowledge-retention": (
        "asks for information the user already gave",
        "asks the user to confirm, clarify or correct a fact",
    ),
    "role-adherence": (
        "Read the whole conversation before deciding",
        "politely declines an out-of-scope request",
    ),
    "conversation-relevancy": (
        "only when the answer is completely irrelevant",
        "Vague answers to vague messages, such as greetings, are relevant",
    ),
}


@pytest.mark.parametrize("name", list(DEEPEVAL_RULES))
def test_show_prompts_renders_a_conversation_scorer_on_the_example_conversation(name: str) -> None:
    """What ``tracescore scorers --show-prompts`` prints, with DeepEval's decision rules in it."""
    shown = CliRunner().invoke(app, ["scorers", "--show-prompts", name])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert "shown on an example conversation" in text and "## step generate_reason" in text
    assert (
        "Turn 3 user: What is my name? assistant: Your name is Ada, and you live in Lyon." in text
    )
    for rule in DEEPEVAL_RULES[name]:
        assert rule in text, rule
    listed = {
        e["name"]: e
        for e in json.loads(CliRunner().invoke(app, ["scorers", "--format", "json"]).stdout)
    }
    assert listed[name]["conversation"] is True and listed["faithfulness"]["conversation"] is False


def test_a_config_binding_a_conversation_scorer_to_runs_is_refused() -> None:
    """Bound to runs, a conversation scorer would store not_scorable for every run: the config
    check names the key instead."""
    judges = "judges: {default: {model: openai/gpt-4o-mini}}\n"
    with pytest.raises(
        ConfigError,
        match=r"scorers\.1\.target \(line 4\): scorer 'role-adherence' judges whole "
        r"conversations: set target: conversation",
    ):
        parse_config(
            judges + "scorers:\n  - {name: coverage, scorer: keyword-coverage}\n"
            "  - {name: in-role, scorer: role-adherence}\n",
            "tracescore.yaml",
        )
    config = parse_config(
        judges + "scorers:\n  - {name: in-role, scorer: role-adherence, target: conversation}\n"
        "  - {name: chat-coverage, scorer: keyword-coverage, target: conversation}\n",
        "x.yaml",
    )
    assert [b.target for b in config.scorers] == [
        "conversation",
        "conversation",
    ]  # run scorers may judge chats


PINNED_PROMPTS = FIXTURES / "conversation_judge_prompts.json"


def prompts_fingerprint(name: str) -> dict[str, str]:
    """The scorer's version and a hash of every request it sends, on the example conversation."""
    scorer = example_scorer(name)
    text = "\n".join(
        m["content"] for p in shown_prompts(scorer, EXAMPLE_CONVERSATION) for m in p.messages
    )
    return {"version": scorer.version, "prompts": hashlib.sha256(text.encode()).hexdigest()[:16]}


def test_a_prompt_change_bumps_the_conversation_scorer_version() -> None:
    """Stored scores of an old prompt must not pass for the new one's (``rescore`` and
    ``compare`` tell versions apart). After bumping a version, regenerate the fixture with
    ``python -m tests.scorers.test_conversation_scorers``."""
    pinned = json.loads(PINNED_PROMPTS.read_text())
    assert set(pinned) == set(judge_scorer_names(conversation=True))
    for name in pinned:
        now = prompts_fingerprint(name)
        assert pinned[name]["version"] != now["version"] or pinned[name] == now, (
            f"{name}: its prompts changed but its version did not: bump it"
        )
        assert pinned[name] == now, f"{name}: version bumped, regenerate {PINNED_PROMPTS.name}"


if __name__ == "__main__":
    PINNED_PROMPTS.write_text(
        json.dumps(
            {name: prompts_fingerprint(name) for name in judge_scorer_names(conversation=True)},
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )


@pytest.mark.parametrize("library", ["pydantic-ai", "mastra", "vercel-ai-sdk-v6"])
async def test_a_conversation_rebuilt_from_a_real_capture_is_judged_with_its_system_prompt(
    library: str, server: JudgeServer, judge: LiteLLMJudge
) -> None:
    """The three-turn chats of tests/fixtures/captures/<library>/conversation, as the libraries
    exported them: the role is the agent's own system prompt, the turns are the traces'."""
    (chat,) = by_conversation(read_runs([CAPTURES / library / "conversation"]), max_turns=20)
    server.script("OutOfCharacterTurns", json_reply({"verdicts": [{"turn": 2, "reason": "r"}]}))
    result = await create_role_adherence_scorer(model=judge).run(chat)
    assert result.status == "ok" and result.score == 0.67
    prompt = prompts_with(server, "OutOfCharacterTurns")[0]
    assert f"<role>\n{CONCIERGE}\n</role>" in prompt
    assert (
        "Turn 3\nuser: What is my name?\nassistant: Your name is Ada, and you live in Lyon."
        in prompt
    )
