// Drives the llm_gateway operator console (GET /llm_gateway/ on Caddy's
// admin endpoint) in headless Chromium, every tab, with the config that
// ../browser-test.sh writes:
//   pool browser: keys healthy and flaky (the mock answers 429, Retry-After 600, for flaky)
//   pool demo:    5 keys, max_concurrency_per_key 1, cooldown_after_success (model mock-demo)
//   pool queue:   1 slow key, max_concurrency_per_key 1 (model mock-slow)
//   pool play:    1 key streaming at a paced rate (model mock-play)
// and a second gateway with 1,000 keys (ADMIN_BIG) for the payload size and
// render time. Screenshots of every tab at 1280 and 420 px go to ARTIFACTS.
//
//   ADMIN=... GATEWAY=... GATEWAY_KEY=... ADMIN_BIG=... ARTIFACTS=../artifacts node console.mjs
//
// CHROMIUM (default /usr/bin/chromium) is the browser binary.
import { chromium } from "playwright-core";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { get as httpGet } from "node:http";

const env = (name, def) => {
  const v = process.env[name] ?? def;
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};
const admin = env("ADMIN");
const adminBig = env("ADMIN_BIG", "");
const gateway = env("GATEWAY");
const gatewayKey = env("GATEWAY_KEY");
const artifacts = env("ARTIFACTS", "../artifacts");
const timeout = 15000;
const TABS = ["pools", "requests", "usage", "sessions", "exits", "playground"];
const PACING_RGB = "rgb(3, 105, 161)"; // --pacing
const TROUBLE_RGB = "rgb(185, 28, 28)"; // --breaker

const log = (msg) => console.log(`browser: ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function check(cond, msg) { if (!cond) throw new Error(msg); }
// a computed style read in one go (the pools view is redrawn every second)
const styleOf = (page, sel, prop) => page.evaluate(([s, p]) => { const e = document.querySelector(s); return e ? getComputedStyle(e)[p] : "(missing)"; }, [sel, prop]);
const row = (pool, key) => `tr[data-pool="${pool}"][data-key="${key}"]`;

async function chat(model, content, { signal, session } = {}) {
  const headers = { "Authorization": `Bearer ${gatewayKey}`, "Content-Type": "application/json" };
  if (session) headers["X-Session-Id"] = session;
  const resp = await fetch(`${gateway}/v1/chat/completions`, {
    method: "POST", headers, signal,
    body: JSON.stringify({ model, messages: [{ role: "user", content }] }),
  });
  await resp.text();
  return { status: resp.status, id: resp.headers.get("x-request-id") };
}
async function adminJSON(base, path) {
  const resp = await fetch(`${base}/llm_gateway/${path}`);
  const text = await resp.text();
  return { status: resp.status, body: resp.ok ? JSON.parse(text) : text, bytes: Buffer.byteLength(text) };
}
// wireBytes: the bytes of a GET as a browser receives it (gzip accepted)
const wireBytes = (url) => new Promise((resolve, reject) => {
  httpGet(url, { headers: { "Accept-Encoding": "gzip, deflate, br" } }, (res) => {
    let n = 0;
    res.on("data", (c) => { n += c.length; });
    res.on("end", () => resolve({ bytes: n, encoding: res.headers["content-encoding"] || "identity" }));
  }).on("error", reject);
});
// the mock's answer (mockupstream.Text) for a short one-line prompt
const mockAnswer = (prompt) => "Mock answer to: " + prompt.trim().split(/\s+/).join(" ");

const profile = mkdtempSync(join(tmpdir(), "llmgw-chromium-"));
mkdirSync(artifacts, { recursive: true });
const context = await chromium.launchPersistentContext(profile, {
  executablePath: env("CHROMIUM", "/usr/bin/chromium"),
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  viewport: { width: 1280, height: 800 },
});
// request interception: anything not for the admin endpoints is refused
// and reported
const foreign = [];
const adminOrigins = [new URL(admin).origin, adminBig ? new URL(adminBig).origin : admin];
await context.route((url) => !adminOrigins.includes(url.origin), (route) => {
  foreign.push(route.request().url());
  return route.abort();
});
const problems = [];
let failed = false;
let page;
const t0 = Date.now();
try {
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  // until the usage API exists in this build, its 404 is the one expected error
  let usageMissing = false;
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (usageMissing && /\/llm_gateway\/usage/.test(m.location().url || "") && /404/.test(m.text())) return;
    problems.push(`console error: ${m.text()} (${m.location().url || ""})`);
  });
  let pageRequests = 0;
  page.on("request", () => pageRequests++);

  const go = async (tab) => {
    await page.evaluate((t) => { location.hash = t; }, tab);
    await page.locator(`[data-view="${tab}"]:not([hidden])`).waitFor({ timeout });
  };

  // ---- Pools: the first view; the events list says so when empty
  const resp = await page.goto(`${admin}/llm_gateway/`, { timeout });
  check(resp && resp.status() === 200, `console answered ${resp && resp.status()}`);
  await page.locator("#conn.live").waitFor({ timeout });
  await page.locator(`${row("browser", "flaky")} [data-state="ready"]`).waitFor({ timeout });
  const empty = await page.locator("#log").innerText();
  check(/no events yet/.test(empty), `empty events list reads "${empty}"`);
  log(`pools tab live, events list reads "${empty.trim()}"`);

  // a key cooled by the mock's 429 shows live, with its reason
  let cooledSeen = false;
  for (let i = 0; i < 6 && !cooledSeen; i++) {
    await chat("mock-gpt", `browser test ${i}`);
    cooledSeen = await page.locator(`${row("browser", "flaky")} [data-state="cooling"]`)
      .waitFor({ timeout: 1500 }).then(() => true, () => false);
  }
  check(cooledSeen, "key flaky never showed as cooling");
  const cooldownText = await page.locator(`${row("browser", "flaky")} td[data-col="cooldown"]`).innerText();
  check(/left/.test(cooldownText) && /retry-after/.test(cooldownText), `cooldown cell reads "${cooldownText}"`);
  await page.locator("#log [data-event=cooldown_start]").first().waitFor({ timeout });
  const flakyBadge = await styleOf(page, `${row("browser", "flaky")} .state`, "backgroundColor");
  check(flakyBadge !== PACING_RGB, `a 429 cooldown is coloured as pacing (${flakyBadge})`);
  log(`flaky cooling (${cooldownText.trim()}), event logged`);
  await page.locator(`${row("browser", "flaky")} button[data-action="diagnose"]`).click();
  await page.locator(`#diag-rows ${row("browser", "flaky")}`, { hasText: "http_429" }).waitFor({ timeout });
  await page.locator(`${row("browser", "flaky")} button[data-action="clear"]`).click();
  await page.locator(`${row("browser", "flaky")} [data-state="ready"]`).waitFor({ timeout });
  await page.locator(`${row("browser", "healthy")} button[data-action="disable"]`).click();
  await page.locator(`${row("browser", "healthy")} [data-state="disabled"]`).waitFor({ timeout });
  await page.locator(`${row("browser", "healthy")} button[data-action="enable"]`).click();
  await page.locator(`${row("browser", "healthy")} [data-state="ready"]`).waitFor({ timeout });
  log("diagnose shows http_429; Clear, Disable and Enable work");

  // pacing, not trouble: every demo key resting after a success
  await Promise.all([1, 2, 3, 4, 5].map((i) => chat("mock-demo", `pace ${i}`)));
  await page.locator('[data-pool-heading="demo"] [data-pool-state="pacing"]').waitFor({ timeout: 5000 });
  const paceSummary = await page.locator('[data-pool-summary="demo"]').innerText();
  const paceColour = await styleOf(page, '[data-pool-heading="demo"] [data-pool-state]', "backgroundColor");
  check(/^pacing: /.test(paceSummary) && /resting after a success/.test(paceSummary), `demo summary reads "${paceSummary}"`);
  check(paceColour === PACING_RGB && paceColour !== TROUBLE_RGB, `pacing badge colour ${paceColour}`);
  const pacingKeys = await page.locator('tr[data-pool="demo"] .state.pacing').count();
  check(pacingKeys === 5, `${pacingKeys} demo keys coloured as pacing, want 5`);
  log(`demo pool pacing: "${paceSummary}" in ${paceColour}`);

  // 13 requests for one slow key: 1 in flight, 12 waiting
  const abort = new AbortController();
  const queued = Array.from({ length: 13 }, (_, i) => chat("mock-slow", `queued ${i}`, { signal: abort.signal }).catch(() => null));
  await page.locator('[data-pool-heading="queue"] [data-waiting="12"]').waitFor({ timeout });
  const queueSummary = await page.locator('[data-pool-summary="queue"]').innerText();
  check(/12 waiting/.test(queueSummary), `queue summary reads "${queueSummary}"`);
  log(`queue pool shows 12 waiting ("${queueSummary}")`);
  await page.screenshot({ path: join(artifacts, "console-pools-queued-1280.png"), fullPage: true });
  abort.abort();
  await Promise.all(queued);
  await page.locator('[data-pool-heading="queue"] [data-waiting="0"]').waitFor({ timeout });

  // ---- Requests: one found by id, with its attempt log
  const sent = await chat("mock-gpt", "find me by id");
  check(sent.status === 200 && sent.id, `request for the log: ${sent.status} ${sent.id}`);
  const apiEntry = (await adminJSON(admin, `requests?id=${sent.id}`)).body.requests[0];
  check(apiEntry && apiEntry.attempts.length >= 1, `API has no entry for ${sent.id}`);
  await go("requests");
  await page.locator("#req-rows tr[data-request-id]").first().waitFor({ timeout });
  await page.fill("#req-q", sent.id);
  await page.locator(`#req-detail [data-detail-id="${sent.id}"]`).waitFor({ timeout });
  const attemptRows = await page.locator(`[data-attempts="${sent.id}"] tr[data-attempt]`).allInnerTexts();
  check(attemptRows.length === apiEntry.attempts.length, `${attemptRows.length} attempt rows, API has ${apiEntry.attempts.length}`);
  apiEntry.attempts.forEach((a, i) => check(attemptRows[i].includes(a.key) && attemptRows[i].includes(a.outcome), `attempt ${i + 1} reads "${attemptRows[i]}", want ${a.key} ${a.outcome}`));
  const shown = await page.locator("#req-rows tr[data-request-id]").count();
  check(shown === 1, `search by id shows ${shown} rows`);
  log(`request ${sent.id} found by id, ${attemptRows.length} attempt(s): ${attemptRows.map((r) => r.replace(/\s+/g, " ")).join(" | ")}`);
  await page.fill("#req-q", "");
  await page.selectOption("#req-status", "4xx");
  await page.waitForFunction(() => { const r = [...document.querySelectorAll("#req-rows tr[data-request-id]")]; return r.length > 0 && r.every((t) => t.dataset.status.startsWith("4")); }, null, { timeout });
  await page.selectOption("#req-status", "");
  log("status filter 4xx shows only 4xx");

  // ---- Sessions: a pinned session, unpinned from the page
  await chat("mock-gpt", "a pinned conversation", { session: "browser-session-1" });
  await go("sessions");
  await page.locator('tr[data-session="h:browser-session-1"]').waitFor({ timeout });
  await page.locator('tr[data-session="h:browser-session-1"] button[data-action="unpin"]').click();
  await page.locator('tr[data-session="h:browser-session-1"]').waitFor({ state: "detached", timeout });
  log("session browser-session-1 shown and unpinned");

  // ---- Usage: one mark per series point, matching the usage API
  const usageProbe = await adminJSON(admin, "usage?by=key");
  usageMissing = usageProbe.status === 404;
  await go("usage");
  if (usageProbe.status === 200) {
    await page.selectOption("#usage-by", "key");
    await page.selectOption("#usage-metric", "requests");
    await page.selectOption("#usage-range", "48h");
    await page.waitForFunction(() => { const s = document.querySelector("#usage-chart svg"); return s && s.getAttribute("data-metric") === "requests" && document.querySelectorAll("#usage-chart rect.mark").length > 0; }, null, { timeout });
    // the page's own query, read back from the CSV link
    const csvHref = await page.locator("#usage-csv").getAttribute("href");
    const jsonQuery = csvHref.replace(/^usage\?/, "").replace(/&?format=csv/, "");
    const api = (await adminJSON(admin, `usage?${jsonQuery}`)).body;
    await sleep(3500); // one refresh later, both read the same buckets
    const marks = await page.locator("#usage-chart rect.mark").evaluateAll((rs) => rs.map((r) => ({ name: r.dataset.name, start: r.dataset.start, v: Number(r.dataset.value) })));
    const api2 = (await adminJSON(admin, `usage?${jsonQuery}`)).body;
    check(marks.length === api2.points.length, `${marks.length} marks, the usage API has ${api2.points.length} points`);
    const byName = {};
    for (const m of marks) byName[m.name] = (byName[m.name] || 0) + m.v;
    for (const [name, c] of Object.entries(api2.totals)) check(byName[name] === c.requests, `chart ${name}: ${byName[name]} requests, API ${c.requests}`);
    for (const p of api2.points) check(marks.some((m) => m.name === p.name && Date.parse(m.start) === Date.parse(p.start) && m.v === p.requests), `no mark for ${p.name} at ${p.start}`);
    const series = Object.keys(api2.totals).length;
    const tableReqs = await page.locator("#usage-rows tr[data-usage-name] [data-requests]").evaluateAll((tds) => tds.map((t) => Number(t.dataset.requests)).reduce((a, b) => a + b, 0));
    check(tableReqs === api2.total.requests, `usage table sums ${tableReqs} requests, API ${api2.total.requests}`);
    const csv = await fetch(`${admin}/llm_gateway/${csvHref}`);
    const csvText = await csv.text();
    check(csv.status === 200 && /^start,by,name,requests/.test(csvText), `CSV download: ${csv.status} ${csvText.slice(0, 80)}`);
    void api;
    log(`usage chart: ${marks.length} marks for ${series} series = the API's ${api2.points.length} points, ${api2.total.requests} requests; CSV ${csvText.split("\n").length - 2} rows`);
  } else {
    await page.locator('[data-usage="unavailable"]').waitFor({ timeout });
    log(`usage API answers ${usageProbe.status}: the tab says it is not available`);
  }

  // ---- Exits
  await go("exits");
  await page.locator("#egress [data-exits], #egress tr[data-exit]").first().waitFor({ timeout });
  log(`exits tab: ${(await page.locator("#egress").innerText()).trim().slice(0, 80)}`);

  // ---- Playground: streamed in more than one paint, all three dialects
  await go("playground");
  // the model list (GET /llm_gateway/models) is loaded before typing
  await page.waitForFunction(() => document.querySelectorAll("#pg-models option").length >= 4 && document.getElementById("pg-model").value !== "", null, { timeout });
  const offered = await page.locator("#pg-models option").evaluateAll((os) => os.map((o) => o.value));
  for (const m of ["mock-gpt", "mock-demo", "mock-slow", "mock-play"]) check(offered.includes(m), `playground models ${offered.join(",")} lack ${m}`);
  for (const [dialect, stream] of [["openai", true], ["anthropic", true], ["responses", true], ["openai", false]]) {
    const prompt = `hello from the console playground in ${dialect}`;
    await page.fill("#pg-model", "mock-play");
    await page.selectOption("#pg-dialect", dialect);
    await page.setChecked("#pg-stream", stream);
    await page.fill("#pg-prompt", prompt);
    // record the answer's length at every animation frame
    await page.evaluate(() => {
      window.__paints = [];
      const out = document.getElementById("pg-output");
      out.textContent = "";
      out.removeAttribute("data-done");
      const tick = () => { window.__paints.push(out.textContent.length); if (!out.hasAttribute("data-done") || window.__paints.length < 2) requestAnimationFrame(tick); };
      requestAnimationFrame(tick);
    });
    await page.click("#pg-send");
    await page.locator("#pg-output[data-done]").waitFor({ timeout });
    const text = await page.locator("#pg-output").textContent();
    const want = mockAnswer(prompt);
    check(text === want, `${dialect} playground answer "${text}", want "${want}" (${(await page.locator("#pg-meta").innerText()).replace(/\s+/g, " ")})`);
    const paints = await page.evaluate(() => window.__paints);
    const partial = [...new Set(paints.filter((n) => n > 0 && n < want.length))];
    if (stream) check(partial.length >= 1, `${dialect} stream arrived in one paint (lengths ${paints.join(",")})`);
    const routed = await page.locator('[data-pg="routed-via"]').innerText();
    const rid = await page.locator('[data-pg-request-id]').getAttribute("data-pg-request-id");
    const ttfb = await page.locator('[data-pg="ttfb"]').innerText();
    const total = await page.locator('[data-pg="total"]').innerText();
    check(/play/.test(routed) && rid && /\d/.test(ttfb) && /\d/.test(total), `playground meta: routed "${routed}", id "${rid}", ttfb "${ttfb}", total "${total}"`);
    check(!(await page.locator('[data-pg="error"]').count()), `${dialect} playground shows an error`);
    log(`playground ${dialect}${stream ? " stream" : ""}: "${text}" in ${partial.length + 1} paints, X-Routed-Via ${routed}, TTFB ${ttfb}, total ${total}`);
  }

  // the playground's request id opens that request in the Requests tab
  const pgId = await page.locator("[data-pg-request-id]").getAttribute("data-pg-request-id");
  await page.click("[data-pg-request-id]");
  await page.locator(`#req-detail [data-detail-id="${pgId}"]`).waitFor({ timeout });
  const pgDetail = await page.locator("#req-detail").innerText();
  check(/playground/.test(pgDetail) && /play/.test(pgDetail), `the playground request's detail reads "${pgDetail.slice(0, 200)}"`);
  await page.fill("#req-q", "");
  log(`playground request ${pgId} opened in the Requests tab (gateway key playground)`);

  // ---- Masking: on, remembered over a reload, off
  await go("pools");
  await page.locator(`${row("browser", "healthy")}`).waitFor({ timeout });
  const blur = () => styleOf(page, `${row("browser", "healthy")} td[data-col="key"] .m`, "filter");
  check(!/blur/.test(await blur()), "key id blurred before masking");
  await page.click("#mask-toggle");
  check(/blur/.test(await blur()), "key id not blurred with masking on");
  await page.reload();
  await page.locator(`${row("browser", "healthy")}`).waitFor({ timeout });
  check(await page.isChecked("#mask-toggle") && /blur/.test(await blur()), "masking not remembered over a reload");
  const hostBlur = await styleOf(page, `${row("browser", "healthy")} td:nth-child(2) .m`, "filter");
  check(/blur/.test(hostBlur), "upstream host not blurred");
  await page.screenshot({ path: join(artifacts, "console-pools-masked-1280.png"), fullPage: true });
  await page.click("#mask-toggle");
  check(!/blur/.test(await blur()), "key id still blurred with masking off");
  log("masking on (key ids and hosts blurred), remembered over a reload, off");

  // ---- every tab at 1280 and 420 px: no horizontal overflow, actions reachable
  for (const width of [1280, 420]) {
    await page.setViewportSize({ width, height: 900 });
    for (const tab of TABS) {
      await go(tab);
      await sleep(tab === "usage" ? 600 : 250);
      if (tab === "playground") { // a finished answer in the picture
        await page.waitForFunction(() => document.querySelectorAll("#pg-models option").length > 0, null, { timeout });
        await page.fill("#pg-model", "mock-play");
        await page.fill("#pg-prompt", "show the routing headers and timings");
        await page.click("#pg-send");
        await page.locator("#pg-output[data-done]").waitFor({ timeout });
      }
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, `${tab} at ${width} px overflows by ${over} px`);
      if (tab === "pools") {
        const boxes = await page.locator('button[data-action="diagnose"]').evaluateAll((bs) => bs.map((b) => b.getBoundingClientRect().right));
        check(boxes.length > 0 && boxes.every((r) => r <= window_width(width)), `a Diagnose button is off screen at ${width} px (${boxes.join(",")})`);
      }
      await page.screenshot({ path: join(artifacts, `console-${tab}-${width}.png`), fullPage: true });
    }
  }
  log("every tab at 1280 and 420 px: no horizontal overflow, key actions on screen; screenshots saved");

  // ---- 1,000 keys: payload size and render time
  if (adminBig) {
    const big = await adminJSON(adminBig, "pools");
    const keys = big.body.reduce((n, p) => n + p.keys.length, 0);
    const wire = await wireBytes(`${adminBig}/llm_gateway/pools`);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${adminBig}/llm_gateway/`, { timeout });
    await page.waitForFunction((n) => document.querySelectorAll("tr[data-key]").length === n, keys, { timeout: 30000 });
    const firstAt = Number(await page.locator("#pool-list").getAttribute("data-first-render-at"));
    const renders = [Number(await page.locator("#pool-list").getAttribute("data-render-ms"))];
    // redraws: switching back to the Pools tab draws it again
    for (let i = 0; i < 4; i++) {
      const last = await page.locator("#pool-list").getAttribute("data-rendered");
      await go("requests");
      await go("pools");
      await page.waitForFunction((l) => document.getElementById("pool-list").getAttribute("data-rendered") !== l, last, { timeout });
      renders.push(Number(await page.locator("#pool-list").getAttribute("data-render-ms")));
    }
    // one refresh as the 1 s poll does it: fetch and parse
    const fetchMs = await page.evaluate(async () => { const t = performance.now(); JSON.parse(await (await fetch("pools")).text()); return performance.now() - t; });
    renders.sort((a, b) => a - b);
    console.log(`browser: 1000 keys: GET /llm_gateway/pools ${big.bytes} bytes of JSON (${(big.bytes / 1024).toFixed(0)} KiB), ${wire.bytes} bytes on the wire (${wire.encoding}) for ${keys} keys, fetched and parsed in the page in ${fetchMs.toFixed(0)} ms; ` +
      `first full view drawn ${firstAt} ms after navigation; a redraw of 1000 rows takes median ${renders[2].toFixed(0)} ms (min ${renders[0].toFixed(0)}, max ${renders[4].toFixed(0)}); an unchanged answer is not redrawn`);
    check(keys === 1000, `big gateway has ${keys} keys`);
    check(wire.encoding === "gzip" && wire.bytes < big.bytes / 4, `pools payload on the wire: ${wire.bytes} bytes ${wire.encoding}`);
    await page.screenshot({ path: join(artifacts, "console-pools-1000-keys-1280.png") });
  }

  check(pageRequests > 0, "no page requests were seen");
  check(!foreign.length, `requests to hosts other than the admin endpoint: ${foreign.join(", ")}`);
  check(!problems.length, problems.join("\n"));
  log(`ok: no console errors, ${pageRequests} page requests all to the admin endpoint (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
} catch (e) {
  failed = true;
  console.error(`browser: FAILED: ${e.message}`);
  if (problems.length) console.error(problems.join("\n"));
  try { if (page) await page.screenshot({ path: join(artifacts, "console-failure.png"), fullPage: true }); } catch {}
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

function window_width(w) { return w; }
