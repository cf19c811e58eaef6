"""Answer relevancy: how much of the answer addresses the user's request (Mastra's ``answer-relevancy-scorer``)."""

from __future__ import annotations

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    is_yes,
    judge_instructions,
    judge_prompt,
    one_per_item,
    reason_step,
    reason_task,
)
from tracescore.scorers.llm.run_text import (
    describe_run,
    numbered,
    response_text,
    section,
    user_text,
)
from tracescore.scorers.llm.typical_answers import answer_items, judged
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.utils import round_to_two_decimals

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score.

2: the prompts carry every decision rule of Mastra's (a wrong but on-topic answer is "unsure",
how to split statements), with examples; runs that failed before answering are not scorable."""

INSTRUCTIONS = judge_instructions(
    "You judge whether what an AI agent said answers what its user asked. You judge relevance, "
    "never correctness: a statement that answers the question wrongly is still about the "
    "question. Empty statements, error messages and answers to an empty question are not "
    "relevant."
)

STATEMENTS_TASK = """Split the agent's final answer into statements, keeping their order and
including every statement, relevant or not.
- Split a compound sentence into one statement per fact: parts joined by "and", or one sentence
  carrying several facts or several descriptions of its subject.
- Do not split too aggressively: a fact stays together with its qualifiers and context.
- A one-word answer is one statement. An error message is one statement, however long.
- An empty answer has no statements: return an empty list.

Example. Answer: "Lyon. It lies where the Rhone and the Saone meet and has about 520,000
inhabitants." Statements: ["Lyon.", "Lyon lies where the Rhone and the Saone meet.", "Lyon has
about 520,000 inhabitants."]
Example. Answer: "Error: upstream timeout after 30 s (request id 8f2c)." Statements: ["Error:
upstream timeout after 30 s (request id 8f2c)."]"""

RESULTS_TASK = """Decide, for each statement in order, how relevant it is to the user's request
(the <user> section). Give exactly one result per statement, each with a one-sentence reason.
- "yes": the statement directly answers the request with the right kind of answer: a place for
  "where", a person for "who", a time for "when", a number for "how many".
- "unsure": the statement is partly relevant: it talks about the kind of information asked for,
  or mentions related entities without stating the answer, or it answers the question but
  wrongly. Correctness is not judged here, relevance is: a wrong answer to the question is
  "unsure", not "no".
- "no": the statement is off topic, empty or meaningless, or an error message. Every statement
  is "no" when the user's request is empty.

Example. Request: "Who painted the Night Watch?"
- "Rembrandt painted it in 1642." -> yes (names the painter)
- "Vermeer painted the Night Watch." -> unsure (answers the question, but wrongly)
- "The painting hangs in the Rijksmuseum." -> unsure (about the painting, not its painter)
- "I enjoy museums on rainy days." -> no (off topic)
- "Error: search service unavailable." -> no (an error message)"""


class AnswerStatements(Wire):
    statements: list[str]


class RelevancyResult(Wire):
    result: str
    reason: str = ""


class RelevancyResults(Wire):
    results: list[RelevancyResult]


def create_answer_relevancy_scorer(
    *, model: JudgeSpec, uncertainty_weight: float = 0.3, scale: float = 1.0
) -> Scorer:
    """``(relevant + uncertainty_weight × unsure) / statements × scale``.

    Each option keeps its default when not given (Mastra replaces its whole options object, so
    passing only ``scale`` made the score NaN).
    """

    def statements_prompt(ctx: StepContext) -> str:
        return judge_prompt(STATEMENTS_TASK, section("final_answer", response_text(ctx.run)))

    def results_prompt(ctx: StepContext) -> str:
        statements = ctx.results["preprocess_step_result"].statements
        return judge_prompt(
            RESULTS_TASK,
            describe_run(ctx.run, steps=False),
            section("statements", numbered(statements), cut=False),
        )

    def score(ctx: StepContext) -> float:
        results = ctx.results["analyze_step_result"].results
        if not results:
            return 0.0
        relevant = sum(is_yes(r.result) for r in results)
        unsure = sum(r.result.strip().lower() == "unsure" for r in results)
        return round_to_two_decimals(
            (relevant + uncertainty_weight * unsure) / len(results) * scale
        )

    def reason_prompt(ctx: StepContext) -> str:
        results = ctx.results["analyze_step_result"].results
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The agent's answer scored {ctx.score} for relevancy on a 0 to {scale:g} scale
(relevant statements, plus {uncertainty_weight:g} for each partly relevant one, over all
statements). Say what addressed the request and what did not; when there are no results, say
why. Relevance is explained, not correctness.""",
            ),
            section("user", user_text(ctx.run)),
            section("final_answer", response_text(ctx.run)),
            section("results", numbered([f"{r.result}: {r.reason}" for r in results])),
        )

    return (
        create_scorer(
            id="answer-relevancy-scorer",
            description="How well the answer addresses the user's request",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
            needs_answer=True,
        )
        .preprocess(
            PromptStep(
                "Split the answer into statements",
                statements_prompt,
                AnswerStatements,
                sketch=answer_items(AnswerStatements),
            )
        )
        .analyze(
            PromptStep(
                "Judge each statement's relevance",
                results_prompt,
                RelevancyResults,
                check=one_per_item(
                    lambda ctx: ctx.results["preprocess_step_result"].statements,
                    lambda answer: answer.results,
                    "statement",
                    "result",
                ),
                sketch=lambda ctx: RelevancyResults(
                    results=judged(
                        ctx.results["preprocess_step_result"].statements,
                        lambda statement, reason: RelevancyResult(result="yes", reason=reason),
                    )
                ),
            )
        )
        .generate_score(score)
        .generate_reason(reason_step(reason_prompt, 2.5))
    )
