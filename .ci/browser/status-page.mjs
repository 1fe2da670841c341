// Drives the llm_gateway status page (GET /llm_gateway/ on Caddy's admin
// endpoint) in headless Chromium: the page must show a key going into a
// cooldown live, and bring it back to ready with its Clear button.
//
//   ADMIN=http://127.0.0.1:2019 GATEWAY=http://127.0.0.1:8787 GATEWAY_KEY=... \
//   POOL=browser COOLED_KEY=flaky HEALTHY_KEY=healthy ARTIFACTS=../artifacts node status-page.mjs
//
// CHROMIUM (default /usr/bin/chromium) is the browser binary.
import { chromium } from "playwright-core";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = (name, def) => {
  const v = process.env[name] ?? def;
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};
const admin = env("ADMIN");
const gateway = env("GATEWAY");
const gatewayKey = env("GATEWAY_KEY");
const pool = env("POOL", "browser");
const cooled = env("COOLED_KEY", "flaky");
const healthy = env("HEALTHY_KEY", "healthy");
const artifacts = env("ARTIFACTS", "../artifacts");
const timeout = 15000;

function log(msg) {
  console.log(`browser: ${msg}`);
}

const row = (key) => `tr[data-pool="${pool}"][data-key="${key}"]`;

async function chat(i) {
  const resp = await fetch(`${gateway}/v1/chat/completions`, {
    method: "POST",
    headers: { "Authorization": `Bearer ${gatewayKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "mock-gpt", messages: [{ role: "user", content: `browser test ${i}` }] }),
  });
  await resp.text();
  return resp.status;
}

const profile = mkdtempSync(join(tmpdir(), "llmgw-chromium-"));
mkdirSync(artifacts, { recursive: true });
const context = await chromium.launchPersistentContext(profile, {
  executablePath: env("CHROMIUM", "/usr/bin/chromium"),
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  viewport: { width: 1500, height: 700 },
});
let failed = false;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });

  // a plain navigation, as a user typing the address would do
  const resp = await page.goto(`${admin}/llm_gateway/`, { timeout });
  if (!resp || resp.status() !== 200) throw new Error(`status page answered ${resp && resp.status()}`);
  await page.locator("#conn.live").waitFor({ timeout });
  await page.locator(`${row(cooled)} [data-state="ready"]`).waitFor({ timeout });
  await page.locator(`${row(healthy)} [data-state="ready"]`).waitFor({ timeout });
  log("page loaded, both keys ready, events stream live");

  // the mock answers 429 with Retry-After: 600 for the cooled key; send
  // requests until the gateway has tried it once
  let cooledSeen = false;
  for (let i = 0; i < 6 && !cooledSeen; i++) {
    const status = await chat(i);
    log(`request ${i}: ${status}`);
    cooledSeen = await page.locator(`${row(cooled)} [data-state="cooling"]`)
      .waitFor({ timeout: 1500 }).then(() => true, () => false);
  }
  if (!cooledSeen) throw new Error(`key ${cooled} never showed as cooling`);
  const cooldownText = await page.locator(`${row(cooled)} td:nth-child(5)`).innerText();
  if (!/left/.test(cooldownText) || !/retry-after/.test(cooldownText)) {
    throw new Error(`cooldown cell reads "${cooldownText}"`);
  }
  await page.locator("#log div", { hasText: `${pool}/${cooled}  cooldown_start` }).first().waitFor({ timeout });
  log(`key ${cooled} shows as cooling (${cooldownText.trim()}), event logged`);
  await page.screenshot({ path: join(artifacts, "status-page.png"), fullPage: true });

  // diagnose the key: the mock still refuses it
  await page.locator(`${row(cooled)} button[data-action="diagnose"]`).click();
  await page.locator(`#diag-rows ${row(cooled)}`, { hasText: "http_429" }).waitFor({ timeout });
  log("diagnose shows http_429");

  // clear its cooldown from the page
  await page.locator(`${row(cooled)} button[data-action="clear"]`).click();
  await page.locator(`${row(cooled)} [data-state="ready"]`).waitFor({ timeout });
  await page.locator("#log div", { hasText: `${pool}/${cooled}  cooldown_end` }).first().waitFor({ timeout });
  log(`key ${cooled} is ready again after Clear`);

  // disable and enable the healthy key
  await page.locator(`${row(healthy)} button[data-action="disable"]`).click();
  await page.locator(`${row(healthy)} [data-state="disabled"]`).waitFor({ timeout });
  await page.locator(`${row(healthy)} button[data-action="enable"]`).click();
  await page.locator(`${row(healthy)} [data-state="ready"]`).waitFor({ timeout });
  log(`key ${healthy} disabled and enabled`);
  await page.screenshot({ path: join(artifacts, "status-page-cleared.png"), fullPage: true });

  if (problems.length) throw new Error(problems.join("\n"));
  log("ok");
} catch (e) {
  failed = true;
  console.error(`browser: FAILED: ${e.message}`);
  try {
    const page = context.pages()[0];
    if (page) await page.screenshot({ path: join(artifacts, "status-page-failure.png"), fullPage: true });
  } catch {}
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
