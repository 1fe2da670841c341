// Runs the official Node SDKs (openai, @anthropic-ai/sdk) and Vercel's ai SDK
// (@ai-sdk/openai, @ai-sdk/anthropic) through the gateway, case by case from
// a plan written by TestNodeSDKs (caddymodule/node_sdk_test.go), and prints
// every value that differs from what the replayed fixture says.
// Usage: NODE_SDK_MODULES=<dir with node_modules> node harness.cjs plan.json
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const req = createRequire(path.join(process.env.NODE_SDK_MODULES || '.', 'package.json'));
const OpenAI = req('openai');
const Anthropic = req('@anthropic-ai/sdk');
let ai = null, aiOpenAI = null, aiAnthropic = null;
try {
  ai = req('ai');
  aiOpenAI = req('@ai-sdk/openai');
  aiAnthropic = req('@ai-sdk/anthropic');
} catch (e) {
  ai = null; // optional
}

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const oc = new OpenAI.default({ baseURL: plan.base + '/v1', apiKey: plan.key, maxRetries: 0 });
const ac = new Anthropic.default({ baseURL: plan.base, apiKey: plan.key, maxRetries: 0 });
const aio = ai && aiOpenAI.createOpenAI({ baseURL: plan.base + '/v1', apiKey: plan.key });
const aia = ai && aiAnthropic.createAnthropic({ baseURL: plan.base + '/v1', apiKey: plan.key });
const obj = { type: 'object', properties: {} };

// what one call saw, in a shape common to all clients
function view() {
  return { text: '', refusal: '', thinking: '', calls: [], stop: '', reason: '', stopSeq: '', input: 0, output: 0, error: null };
}

async function runChat(c) {
  const v = view();
  const p = { model: c.model, messages: [{ role: 'user', content: 'hi' }] };
  if (c.tools.length) p.tools = c.tools.map((n) => ({ type: 'function', function: { name: n, parameters: obj } }));
  let cc;
  if (c.stream) {
    const st = oc.chat.completions.stream({ ...p, stream_options: { include_usage: true } });
    st.on('chunk', (ch) => {
      for (const choice of ch.choices || []) if (choice.index === 0 && choice.delta && choice.delta.reasoning_content) v.thinking += choice.delta.reasoning_content;
    });
    cc = await st.finalChatCompletion();
  } else {
    cc = await oc.chat.completions.create(p);
    v.thinking = (cc.choices[0] && cc.choices[0].message.reasoning_content) || '';
  }
  const ch = cc.choices.find((x) => x.index === 0);
  v.text = ch.message.content || '';
  v.refusal = ch.message.refusal || '';
  v.stop = ch.finish_reason;
  v.calls = (ch.message.tool_calls || []).map((t) => ({ id: t.id, name: t.function.name, args: t.function.arguments }));
  if (cc.usage) { v.input = cc.usage.prompt_tokens; v.output = cc.usage.completion_tokens; }
  return v;
}

async function runResponses(c) {
  const v = view();
  const p = { model: c.model, input: 'hi', store: false };
  if (c.tools.length) p.tools = c.tools.map((n) => ({ type: 'function', name: n, parameters: obj, strict: false }));
  let r;
  if (c.stream) {
    const st = oc.responses.stream(p);
    let failed = null;
    st.on('event', (ev) => { if (ev.type === 'response.failed' || ev.type === 'error') failed = ev; });
    r = await st.finalResponse();
    if (failed) throw new Error('stream failed: ' + JSON.stringify(failed).slice(0, 200));
  } else {
    r = await oc.responses.create(p);
  }
  v.text = r.output_text || '';
  v.stop = r.status;
  v.reason = (r.incomplete_details && r.incomplete_details.reason) || '';
  for (const it of r.output || []) {
    if (it.type === 'function_call') v.calls.push({ id: it.call_id, name: it.name, args: it.arguments });
  }
  if (r.usage) { v.input = r.usage.input_tokens; v.output = r.usage.output_tokens; }
  return v;
}

async function runAnthropic(c) {
  const v = view();
  const p = { model: c.model, max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] };
  if (c.tools.length) p.tools = c.tools.map((n) => ({ name: n, input_schema: obj }));
  const m = c.stream ? await ac.messages.stream(p).finalMessage() : await ac.messages.create(p);
  for (const b of m.content) {
    if (b.type === 'text') v.text += b.text;
    if (b.type === 'thinking') v.thinking += b.thinking;
    if (b.type === 'tool_use') v.calls.push({ id: b.id, name: b.name, args: JSON.stringify(b.input) });
  }
  v.stop = m.stop_reason;
  v.stopSeq = m.stop_sequence || '';
  const u = m.usage || {};
  v.input = (u.input_tokens || 0) + (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0);
  v.output = u.output_tokens || 0;
  return v;
}

async function runAI(c) {
  const v = view();
  const model = c.client === 'ai-anthropic' ? aia.languageModel(c.model) : c.client === 'ai-chat' ? aio.chat(c.model) : aio.responses(c.model);
  const p = { model, prompt: 'hi', maxRetries: 0 };
  if (c.client === 'ai-responses') p.providerOptions = { openai: { store: false } };
  if (c.tools.length) {
    p.tools = {};
    for (const n of c.tools) p.tools[n] = ai.tool({ description: n, inputSchema: ai.jsonSchema(obj) });
  }
  let r;
  if (c.stream) {
    let streamErr = null;
    const st = ai.streamText({ ...p, onError: ({ error }) => { streamErr = streamErr || error; } });
    for await (const part of st.fullStream) {
      if (part.type === 'error') streamErr = streamErr || part.error;
    }
    if (streamErr) throw streamErr;
    r = { text: await st.text, toolCalls: await st.toolCalls, finishReason: await st.finishReason, usage: await st.usage, reasoningText: await st.reasoningText };
  } else {
    r = await ai.generateText(p);
  }
  v.text = r.text || '';
  v.thinking = r.reasoningText || '';
  v.stop = r.finishReason;
  v.calls = (r.toolCalls || []).map((t) => ({ id: t.toolCallId, name: t.toolName, args: JSON.stringify(t.input) }));
  if (r.usage) { v.input = r.usage.inputTokens || 0; v.output = r.usage.outputTokens || 0; }
  return v;
}

// the ai SDK's finish reason for a client dialect's stop reason
function aiFinish(client, w) {
  if (client === 'ai-responses') {
    if (w.stop === 'incomplete') return w.reason === 'max_output_tokens' ? 'length' : 'content-filter';
    return w.calls && w.calls.length ? 'tool-calls' : 'stop';
  }
  return {
    stop: 'stop', length: 'length', tool_calls: 'tool-calls', content_filter: 'content-filter',
    end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length', tool_use: 'tool-calls', refusal: 'content-filter',
  }[w.stop] || 'other';
}

function sameJSON(a, b) {
  try { return JSON.stringify(sortKeys(JSON.parse(a || '{}'))) === JSON.stringify(sortKeys(JSON.parse(b || '{}'))); } catch (e) { return a === b; }
}
function sortKeys(x) {
  if (Array.isArray(x)) return x.map(sortKeys);
  if (x && typeof x === 'object') return Object.fromEntries(Object.keys(x).sort().map((k) => [k, sortKeys(x[k])]));
  return x;
}

function errStatus(e) {
  if (!e) return 0;
  if (typeof e.status === 'number') return e.status;
  if (typeof e.statusCode === 'number') return e.statusCode;
  if (e.lastError) return errStatus(e.lastError);
  if (e.cause) return errStatus(e.cause);
  return 0;
}

function check(c, v, err) {
  const w = c.want, out = [];
  const diff = (what, got, want) => out.push(`${what}: got ${JSON.stringify(got)} want ${JSON.stringify(want)}`);
  const isAI = c.client.startsWith('ai-');
  if (w.status || w.fail) {
    if (!err) { diff('outcome', 'success', w.status ? `HTTP ${w.status} error` : 'an error'); return out; }
    const cls = err.constructor && err.constructor.name;
    if (w.status) {
      if (errStatus(err) !== w.status) diff('error status', `${errStatus(err)} (${cls}: ${String(err.message).slice(0, 160)})`, w.status);
      if (w.message && !String(err.message + ' ' + (err.responseBody || '')).includes(w.message)) diff('error message', String(err.message).slice(0, 200), w.message);
      if (!isAI) {
        const SDK = c.client === 'anthropic' ? Anthropic : OpenAI;
        if (!(err instanceof SDK.APIError)) diff('error class', cls, 'APIError');
      }
    }
    return out;
  }
  if (err) { diff('outcome', `${err.constructor && err.constructor.name}: ${String(err.message).slice(0, 300)}`, 'success'); return out; }
  // the ai SDK reads a Chat refusal as text with finish reason content-filter
  const text = isAI && w.refusal ? w.text + w.refusal : w.text;
  if (v.text !== text) diff('text', v.text, text);
  if (!isAI && c.client === 'chat' && v.refusal !== (w.refusal || '')) diff('refusal', v.refusal, w.refusal || '');
  if ((c.client === 'chat' || c.client === 'anthropic') && w.thinking !== undefined && v.thinking !== w.thinking) diff('reasoning', v.thinking, w.thinking);
  const stop = isAI ? (w.refusal ? 'content-filter' : aiFinish(c.client, w)) : w.stop;
  if (v.stop !== stop) diff('stop', v.stop, stop);
  if (c.client === 'responses' && v.reason !== (w.reason || '')) diff('incomplete reason', v.reason, w.reason || '');
  if (c.client === 'anthropic' && v.stopSeq !== (w.stopSeq || '')) diff('stop_sequence', v.stopSeq, w.stopSeq || '');
  const wc = w.calls || [];
  if (v.calls.length !== wc.length) diff('tool calls', v.calls, wc);
  else wc.forEach((x, i) => {
    const g = v.calls[i];
    if (g.name !== x.name || !sameJSON(g.args, x.args) || (x.id && g.id !== x.id)) diff(`tool call ${i}`, g, x);
  });
  if (w.usage && (v.input !== w.input || v.output !== w.output)) diff('usage in/out', [v.input, v.output], [w.input, w.output]);
  return out;
}

async function runCase(c) {
  if (c.client.startsWith('ai-') && !ai) return { skipped: true };
  const fn = { chat: runChat, responses: runResponses, anthropic: runAnthropic }[c.client] || runAI;
  let v = null, err = null;
  try { v = await fn(c); } catch (e) { err = e; }
  return { diffs: check(c, v, err) };
}

(async () => {
  const cases = plan.cases;
  for (const c of cases) c.tools = c.tools || [];
  let next = 0, bad = 0, skipped = 0;
  const lines = [];
  async function worker() {
    while (next < cases.length) {
      const c = cases[next++];
      const r = await runCase(c);
      if (r.skipped) { skipped++; continue; }
      for (const d of r.diffs) lines.push(`MISMATCH ${c.name} (${c.stream ? 'stream' : 'whole'}): ${d}`);
      if (r.diffs.length) bad++;
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker));
  lines.sort();
  for (const l of lines) console.log(l);
  const versions = ['openai', '@anthropic-ai/sdk', 'ai', '@ai-sdk/openai', '@ai-sdk/anthropic']
    .map((p) => {
      try { return p + '@' + JSON.parse(fs.readFileSync(path.join(process.env.NODE_SDK_MODULES, 'node_modules', p, 'package.json'), 'utf8')).version; } catch (e) { return p + ' absent'; }
    }).join(', ');
  console.log(`${cases.length} cases (${skipped} skipped), ${bad} with mismatches; ${versions}`);
  process.exit(bad ? 1 : 0);
})();
