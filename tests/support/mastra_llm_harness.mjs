#!/usr/bin/env node
// Runs Mastra's OWN LLM scorers (@mastra/evals 1.10.2) with a mock judge model that answers
// recorded JSON, so tracescore's judge scorers can be compared with them on the same answers.
// Used by tests/support/record_llm_parity.py to write tests/fixtures/parity/llm_judge.jsonl; the test
// suite reads that file and needs neither node nor this script.
//
// Usage (node_modules of ../shared/mastra-harness installed, e.g. a copy with `npm ci`):
//   NODE_PATH=/path/to/node_modules node tests/support/mastra_llm_harness.mjs CASES.jsonl > OUT.jsonl
//   (or run it from a folder whose node_modules holds @mastra/evals)
//
// A case: {id, scorer, options?, input, output, groundTruth?, answers: [step answers in order]}
//   scorer: answer-relevancy | answer-similarity | bias | context-precision | context-relevance |
//           faithfulness | hallucination | noise-sensitivity | prompt-alignment |
//           tool-call-accuracy-llm | toxicity
//   answers: what the judge says to each prompt step, in the order Mastra asks (preprocess,
//            analyze); objects are sent as JSON text. The reason step gets a fixed sentence.
// Output: {id, scorer, score, error?, calls} per line; calls = number of judge calls made.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(pathToFileURL(process.env.MASTRA_MODULES ? `${process.env.MASTRA_MODULES}/` : `${process.cwd()}/`));
const prebuilt = await import(pathToFileURL(require.resolve('@mastra/evals/scorers/prebuilt')).href);

const FACTORIES = {
  'answer-relevancy': (model, o) => (o ? prebuilt.createAnswerRelevancyScorer({ model, options: o }) : prebuilt.createAnswerRelevancyScorer({ model })),
  'answer-similarity': (model, o) => prebuilt.createAnswerSimilarityScorer({ model, ...(o ? { options: o } : {}) }),
  bias: (model, o) => prebuilt.createBiasScorer({ model, options: o }),
  'context-precision': (model, o) => prebuilt.createContextPrecisionScorer({ model, options: o }),
  'context-relevance': (model, o) => prebuilt.createContextRelevanceScorerLLM({ model, options: o }),
  faithfulness: (model, o) => prebuilt.createFaithfulnessScorer({ model, options: o }),
  hallucination: (model, o) => prebuilt.createHallucinationScorer({ model, options: o }),
  'noise-sensitivity': (model, o) => prebuilt.createNoiseSensitivityScorerLLM({ model, options: o }),
  'prompt-alignment': (model, o) => prebuilt.createPromptAlignmentScorerLLM({ model, options: o }),
  'tool-call-accuracy-llm': (model, o) => prebuilt.createToolCallAccuracyScorerLLM({ model, availableTools: (o && o.availableTools) || [] }),
  toxicity: (model, o) => prebuilt.createToxicityScorer({ model, options: o }),
};

const REASON = 'The score is as computed because of the recorded verdicts.';

// A language model (AI SDK v2 spec) answering from a queue: one answer per call, in order.
function queueModel(answers) {
  const state = { calls: 0 };
  const next = () => {
    const answer = state.calls < answers.length ? answers[state.calls] : REASON;
    state.calls += 1;
    return typeof answer === 'string' ? answer : JSON.stringify(answer);
  };
  const usage = { inputTokens: 10, outputTokens: 20, totalTokens: 30 };
  const model = {
    specificationVersion: 'v2',
    provider: 'recorded',
    modelId: 'recorded-answers',
    supportedUrls: {},
    async doGenerate() {
      return { content: [{ type: 'text', text: next() }], finishReason: 'stop', usage, warnings: [], rawCall: { rawPrompt: null, rawSettings: {} } };
    },
    async doStream() {
      const text = next();
      const parts = [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id: 'id-0', modelId: 'recorded-answers', timestamp: new Date(0) },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: text },
        { type: 'text-end', id: 't' },
        { type: 'finish', finishReason: 'stop', usage },
      ];
      const stream = new ReadableStream({ start(controller) { for (const p of parts) controller.enqueue(p); controller.close(); } });
      return { stream, rawCall: { rawPrompt: null, rawSettings: {} }, warnings: [] };
    },
  };
  return { model, state };
}

function innermost(err) {
  let e = err;
  const seen = new Set();
  while (e && typeof e === 'object' && e.cause && !seen.has(e.cause)) { seen.add(e); e = e.cause; }
  return e && e.message ? String(e.message) : String(err);
}

function revive(msgs) {
  return Array.isArray(msgs) ? msgs.map((m) => (m && typeof m.createdAt === 'string' ? { ...m, createdAt: new Date(m.createdAt) } : m)) : msgs;
}

const file = process.argv[2];
const cases = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
for (const c of cases) {
  const { model, state } = queueModel(c.answers || []);
  const input = { inputMessages: [], rememberedMessages: [], systemMessages: [], taggedSystemMessages: {}, ...c.input };
  input.inputMessages = revive(input.inputMessages);
  input.rememberedMessages = revive(input.rememberedMessages);
  const run = { input, output: revive(c.output), runId: `run-${c.id}` };
  if ('groundTruth' in c) run.groundTruth = c.groundTruth;
  let line;
  try {
    const scorer = FACTORIES[c.scorer](model, c.options);
    const result = await scorer.run(run);
    const score = typeof result.score === 'number' && !Number.isFinite(result.score) ? String(result.score) : result.score;
    line = { id: c.id, scorer: c.scorer, score: score ?? null, calls: state.calls };
  } catch (e) {
    line = { id: c.id, scorer: c.scorer, score: null, error: innermost(e), calls: state.calls };
  }
  process.stdout.write(JSON.stringify(line) + '\n');
}
