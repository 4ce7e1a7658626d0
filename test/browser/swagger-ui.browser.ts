/**
 * `npm run test:browser`: a newcomer's first minutes, in a real browser. Starts the built service (dist/) on a fresh
 * data directory (embedded PostgreSQL, demo organisation) and a free port, opens Swagger UI in Debian's Chromium
 * (playwright-core drives it; no browser is downloaded), authorizes with the printed administrator token, and on every
 * operation clicks "Try it out" and "Execute" with only the pre-filled values, in the order a person goes through
 * the page (top to bottom, every DELETE after everything else), expecting a 2xx response code or one of the
 * sensible 4xx answers listed in SENSIBLE_4XX (each with its reason).
 * Failures are screenshotted into test-results/browser-<timestamp>/; a summary is printed; the exit code is 1 on any
 * failure. Not a jest test (jest's testMatch does not match it): it needs the build and a browser.
 *
 * CHROMIUM (default /usr/bin/chromium) names another Chromium; KEEP_DATA_DIR=1 keeps the data directory.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { freePort } from '../../src/common/free-port';
import { DEMO_SLUGS } from '../../src/demo/demo-identities';

const ROOT = path.resolve(__dirname, '../..');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const START_TIMEOUT_MS = 120_000;
const CLUSTER_STARTED_TIMEOUT_MS = 240_000;
const RESPONSE_TIMEOUT_MS = 30_000;

/**
 * The answers outside 2xx that a newcomer's Try it out may sensibly get with the pre-filled values on a fresh
 * install, by operation, each with why it is right (the message says so too). Anything else fails the run.
 */
export const SENSIBLE_4XX: Record<string, { status: string; reason: string }> = {
  // Each answer teaches a rule: what the demo holds, or what an earlier step of the run (the page's examples, top to
  // bottom, then its DELETEs bottom to top) left, and the message says so. The demo's own delete targets (a colleague's
  // membership, an old key) and the tag order (what a cluster uses comes before it) keep the rest of the run 2xx (ADR 0173).
  // The summary names any entry an operation no longer needs ("not needed").
  // DELETEs run last, in reverse order; these find the demo's data still in use, or already gone.
  'DELETE /admin/v1/price-book/{entryIdentity}': {
    status: '409',
    reason: "the demo's entry is in effect: a price that has applied is never deleted, only closed with effectiveTo (PATCH's example does that)",
  },
  'DELETE /api/v1/orgs/{organisationSlug}/scheduled-cluster-upgrades/{scheduledClusterUpgradeIdentity}': {
    status: '409',
    reason: "the administrators' DELETE of the same demo upgrade ran before and cancelled it; the message says it is CANCELLED",
  },
  'DELETE /api/v1/orgs/{organisationSlug}/environments/{environmentSlug}': {
    status: '409',
    reason:
      "the cluster 'api' that POST .../clusters/{environmentSlug}'s example created earlier is still in it (DELETE's example deleted the demo's 'web'): an environment goes after its clusters, and the message says to delete it first",
  },
  'POST /api/v1/observability/{tenantSlug}/alerts/webhook': {
    status: '401',
    reason: "the alert manager calls it with the tenant's webhook token (Bearer), not a personal access token; POST .../alert-webhook-token issues one",
  },
  'POST /api/v1/node-registrations': {
    status: '401',
    reason: "a machine's join command calls it with a join token from POST .../join-config, not a personal access token",
  },
  'POST /admin/v1/scheduled-cluster-upgrades': {
    status: '409',
    reason: 'the demo cluster already has an open scheduled upgrade (one per cluster); PUT and PATCH change that one',
  },
  'POST /api/v1/orgs/{organisationSlug}/webhooks/{webhookIdentity}/deliveries/{deliveryIdentity}/redeliver': {
    status: '404',
    reason: 'a fresh install has delivered nothing (the demo webhook is disabled); GET .../deliveries lists what there is to redeliver',
  },
  'DELETE /api/v1/orgs/{organisationSlug}/cloud-accounts/{cloudAccountIdentity}': {
    status: '409',
    reason:
      "clusters use the account ('api', created by POST's example, and 'web', being deleted): an account can be deleted 24 hours after its last cluster is, and the message says from when",
  },
  ...Object.fromEntries(
    ['platform_2', 'platform_3', 'platform_4', 'platform_5', 'platform_6', 'platform_7', 'byon', 'none', 'empty'].map((type) => [
      `POST /api/v1/orgs/{organisationSlug}/cloud-accounts/{cloudAccountIdentity}/credentials/${type}`,
      { status: '400', reason: `the demo cloud account is on platform_1; ${type} credentials belong to an account of that provider (the message says so)` },
    ]),
  ),
  'POST /api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}/pools/{nodePoolIdentity}/join-config': {
    status: '409',
    reason: 'the demo cluster runs on a cloud provider: its pools get nodes from the provider, only bring-your-own-node pools have join configs',
  },
  'DELETE /api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}/pools/{nodePoolIdentity}/join-tokens': {
    status: '404',
    // Before the pool's DELETE it would be 409: the demo cluster runs on a cloud provider, and only
    // bring-your-own-node pools have join tokens.
    reason: "the node pool's DELETE (run before it) removed the demo pool; the message names the pool that is not found",
  },
  'DELETE /api/v1/organisations/{organisationIdentity}': {
    status: '409',
    reason:
      "the demo organisation still has its cloud account (kept 24 hours after its last cluster), the cluster 'api' and monitoring tenants: the message lists what to delete first",
  },
};

interface Outcome {
  operation: string;
  status: string;
  ok: boolean;
  screenshot?: string;
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** The built service on a fresh DATA_DIR: resolves with its base URL once the start-up banner is out. */
async function startService(dataDir: string, port: number): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const main = path.join(ROOT, 'dist/src/main.js');
  if (!fs.existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm run test:browser does)`);
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  // The embedded database and the defaults of `npm start`, whatever the calling shell has set.
  for (const name of ['DATABASE_URL', 'CREDENTIALS_ENCRYPTION_KEY', 'BOOTSTRAP_ADMIN_TOKEN', 'BOOTSTRAP_ADMIN_TOKEN_FILE', 'DEMO_DATA', 'NODE_ENV', 'BACKGROUND_JOBS_ENABLED'])
    delete env[name];
  const child = spawn(process.execPath, [main], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not start within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
    const poll = setInterval(() => {
      if (out.includes('Swagger UI:')) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve();
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`the service exited (${code}) during start-up:\n${out}`));
    });
  });
  return { child, base: `http://127.0.0.1:${port}`, output: () => out };
}

/** Waits until the demo cluster is started (the simulated driver provisions it in the background). */
async function waitForDemoCluster(base: string, token: string): Promise<void> {
  const url = `${base}/api/v1/orgs/${DEMO_SLUGS.organisation}/clusters/${DEMO_SLUGS.environment}/${DEMO_SLUGS.cluster}`;
  const deadline = Date.now() + CLUSTER_STARTED_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline) {
    const res = await fetch(url, { headers: { Authorization: `Token ${token}` } });
    last = `${res.status} ${res.ok ? ((await res.json()) as { status: string }).status : await res.text()}`;
    if (last === '200 started') return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`demo cluster ${DEMO_SLUGS.environment}/${DEMO_SLUGS.cluster} not started within ${CLUSTER_STARTED_TIMEOUT_MS} ms (last: ${last})`);
}

/**
 * Authorize: the personal access token in the `token` scheme (`Authorization: Token <pat>`). Before typing it, checks
 * what a newcomer sees (a screenshot goes to `dialogShot`): the `token` scheme listed first, its description naming
 * the `Token` prefix, the dialog opened at its top with the cursor in that scheme's field. Returns what is wrong, if
 * anything, after authorizing all the same.
 */
async function authorize(page: Page, token: string, dialogShot: string): Promise<string[]> {
  await page.locator('.scheme-container button.authorize').first().click();
  const dialog = page.locator('.dialog-ux .modal-ux');
  await dialog.waitFor();
  await page.waitForTimeout(500); // what the page does right after opening it (focus, scrolling) has happened
  fs.mkdirSync(path.dirname(dialogShot), { recursive: true });
  await dialog.screenshot({ path: dialogShot });
  const seen = await dialog.evaluate((el) => {
    const content = el.querySelector('.modal-ux-content') as unknown as { scrollTop: number; scrollHeight: number; clientHeight: number } | null;
    const containers = [...el.querySelectorAll('.auth-container')];
    const focused = el.ownerDocument.activeElement;
    return {
      schemes: containers.map((c) => (c.querySelector('h4')?.textContent ?? '').trim().split(/\s/)[0]),
      firstDescription: containers[0]?.textContent ?? '',
      scrollTop: content?.scrollTop ?? -1,
      scrollable: content ? content.scrollHeight > content.clientHeight : false,
      focusedScheme: focused && containers.findIndex((c) => c.contains(focused)),
    };
  });
  const problems: string[] = [];
  if (seen.schemes[0] !== 'token') problems.push(`the first scheme is ${seen.schemes[0]}, not token (order: ${seen.schemes.join(', ')})`);
  if (!/the word `?Token`?/.test(seen.firstDescription) && !seen.firstDescription.includes('Token cms_'))
    problems.push('the first scheme\'s description does not explain the `Token ` prefix');
  if (seen.scrollTop !== 0) problems.push(`the dialog opened scrolled down by ${seen.scrollTop} px (scrollable: ${seen.scrollable})`);
  if (seen.focusedScheme !== 0) problems.push(`the cursor is in scheme ${seen.focusedScheme === null || seen.focusedScheme < 0 ? 'none' : seen.schemes[seen.focusedScheme]}, not token`);
  log(`Authorize dialog: schemes ${seen.schemes.join(', ')}; scrollTop ${seen.scrollTop} of a ${seen.scrollable ? 'scrollable' : 'fitting'} dialog; cursor in ${seen.focusedScheme === null || seen.focusedScheme < 0 ? 'none' : seen.schemes[seen.focusedScheme]} (${path.relative(ROOT, dialogShot)})`);

  const scheme = dialog.locator('.auth-container').filter({ has: page.locator('h4', { hasText: /^token\b/ }) }).first();
  await scheme.locator('input').first().fill(`Token ${token}`);
  await scheme.locator('button.authorize').click();
  await scheme.locator('button', { hasText: 'Logout' }).waitFor(); // shown once the scheme is authorized
  await dialog.locator('button.close-modal').first().click();
  await dialog.waitFor({ state: 'detached' });
  return problems;
}

/**
 * Try it out + Execute on one operation; the response code Swagger UI shows. `force` clicks without waiting for the
 * button to be the topmost element (a retry after the page kept something over it).
 */
async function execute(op: Locator, force = false): Promise<string> {
  await op.scrollIntoViewIfNeeded();
  if (!(await op.evaluate((el) => el.classList.contains('is-open')))) await op.locator('.opblock-summary').first().click({ force });
  const tryOut = op.locator('button.try-out__btn');
  await tryOut.waitFor();
  if ((await tryOut.innerText()).trim() === 'Try it out') await tryOut.click({ force });
  await op.locator('button.execute').click({ force });
  const status = op.locator('.live-responses-table tr.response td.response-col_status').first();
  await status.waitFor({ timeout: RESPONSE_TIMEOUT_MS });
  return (await status.innerText()).trim();
}


/** Try it out + Execute on the operation with this element id; a screenshot (at `screenshotFile()`) when it fails. */
async function tryOperation(page: Page, id: string, name: string, screenshotFile: () => string): Promise<Outcome> {
  const op = page.locator(`[id="${id}"]`).first();
  let outcome: Outcome;
  try {
    // Once more after a pause when the page was busy (a click that timed out is the browser's, not the service's answer).
    const status = await execute(op).catch(async () => {
      await page.waitForTimeout(1000);
      return execute(op, true);
    });
    outcome = { operation: name, status, ok: /^2\d\d$/.test(status) || SENSIBLE_4XX[name]?.status === status };
    if (!outcome.ok) {
      // The answer's message, for the summary.
      const body = await op.locator('.live-responses-table .response-col_description pre').first().innerText().catch(() => '');
      const message = /"message":\s*"([^"]*)"/.exec(body)?.[1];
      if (message) outcome.status += ` ${message.slice(0, 200)}`;
    }
  } catch (e) {
    outcome = { operation: name, status: `no response (${(e as Error).message.split('\n')[0]})`, ok: false };
  }
  if (!outcome.ok) {
    const file = screenshotFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    await op.screenshot({ path: file }).catch(() => page.screenshot({ path: file }));
    outcome.screenshot = path.relative(ROOT, file);
  }
  // Collapse again: keeps the page short while the next operations render.
  await op.locator('.opblock-summary').first().click().catch(() => undefined);
  return outcome;
}

async function run(): Promise<number> {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const resultsDir = path.join(ROOT, 'test-results', `browser-${stamp}`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-browser-data-'));
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-browser-profile-'));
  let service: Awaited<ReturnType<typeof startService>> | undefined;
  let context: BrowserContext | undefined;
  const outcomes: Outcome[] = [];
  try {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM`);
    service = await startService(dataDir, await freePort());
    const token = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    log(`service at ${service.base} (data directory ${dataDir}); waiting for the demo cluster to start`);
    await waitForDemoCluster(service.base, token);

    // A fresh profile each run; playwright passes it as --user-data-dir.
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      chromiumSandbox: false,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1400, height: 1000 },
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(15_000);
    await page.goto(`${service.base}/swagger-ui`);
    await page.locator('.swagger-ui .opblock-tag').first().waitFor({ timeout: 60_000 });
    const dialogProblems = await authorize(page, token, path.join(resultsDir, 'authorize-dialog.png'));
    outcomes.push({ operation: 'Authorize dialog', status: dialogProblems.join('; ') || 'token first, at the top', ok: dialogProblems.length === 0 });

    // Every operation of the document, tag by tag in the page's order (the filter box shows one tag at a time, so
    // every operation of it is on the page): first every one but the DELETEs, then the DELETEs, tags in reverse.
    const doc = (await (await fetch(`${service.base}/v3/api-docs`)).json()) as {
      tags?: { name: string }[];
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
    const all = Object.entries(doc.paths).flatMap(([p, ops]) => METHODS.filter((m) => ops[m]).map((m) => `${m.toUpperCase()} ${p}`));
    const tags = [...new Set([...(doc.tags ?? []).map((t) => t.name), ...Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((o) => o.tags ?? []))])];
    const done = new Set<string>();
    const filter = page.locator('input.operation-filter-input');
    for (const phase of ['others', 'deletes'] as const) {
      // The DELETEs from the last tag to the first: node pools before clusters before environments, as a person tears down.
      for (const tag of phase === 'deletes' ? [...tags].reverse() : tags) {
        await filter.fill(tag);
        const heading = page.locator(`h3.opblock-tag[data-tag="${tag}"]`);
        if ((await heading.count()) === 0) continue;
        if ((await heading.getAttribute('data-is-open')) === 'false') await heading.click();
        const section = page.locator('.opblock-tag-section').filter({ has: heading });
        const ops: { id: string; method: string; path: string }[] = await section.locator('.opblock').evaluateAll((els) =>
          els.map((el) => ({
            id: el.id,
            method: (el.querySelector('.opblock-summary-method')?.textContent ?? '').trim().toUpperCase(),
            path: el.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '',
          })),
        );
        for (const { id, method, path: opPath } of ops) {
          const name = `${method} ${opPath}`;
          if (!opPath || (phase === 'deletes') !== (method === 'DELETE') || done.has(name)) continue; // listed under two tags: tried once
          done.add(name);
          const outcome = await tryOperation(page, id, name, () => path.join(resultsDir, `${String(outcomes.length + 1).padStart(3, '0')}-${name.replace(/[^a-zA-Z0-9]+/g, '_').slice(0, 120)}.png`));
          outcomes.push(outcome);
          log(`${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.status.padEnd(4)} ${outcome.operation}${outcome.screenshot ? `  (${outcome.screenshot})` : ''}${outcome.ok && !/^2/.test(outcome.status) ? `  (sensible: ${SENSIBLE_4XX[name].reason})` : ''}`);
        }
      }
    }
    await filter.fill('');
    for (const k of all) if (!done.has(k)) outcomes.push({ operation: k, status: 'not found in Swagger UI', ok: false });
    if (!outcomes.some((o) => o.operation !== 'Authorize dialog')) throw new Error('Swagger UI showed no operation');
  } catch (e) {
    fs.mkdirSync(resultsDir, { recursive: true });
    const page = context?.pages()[0];
    if (page) await page.screenshot({ path: path.join(resultsDir, 'error.png') }).catch(() => undefined);
    log(`ERROR ${(e as Error).message}`);
    if (service) log(`service output:\n${service.output()}`);
    outcomes.push({ operation: 'run', status: (e as Error).message.split('\n')[0], ok: false });
  } finally {
    await context?.close().catch(() => undefined);
    if (service && service.child.exitCode === null) {
      const exited = new Promise((r) => service!.child.once('exit', r));
      service.child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    }
    fs.rmSync(profileDir, { recursive: true, force: true });
    if (!process.env.KEEP_DATA_DIR) fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const failed = outcomes.filter((o) => !o.ok);
  log('');
  // Entries of the list that were not needed: a change made them answer 2xx, so the entry can go.
  for (const o of outcomes) if (SENSIBLE_4XX[o.operation] && /^2\d\d$/.test(o.status)) log(`  not needed: SENSIBLE_4XX['${o.operation}'] (it answered ${o.status})`);
  const tried = outcomes.filter((o) => o.operation !== 'Authorize dialog');
  const sensible = tried.filter((o) => o.ok && !/^2\d\d$/.test(o.status)).length;
  log(`Swagger UI Try it out: ${tried.filter((o) => o.ok).length} of ${tried.length} operations answered 2xx or a listed sensible 4xx (${sensible} of them the latter)`);
  for (const f of failed) log(`  FAILED ${f.operation}: ${f.status}${f.screenshot ? ` (${f.screenshot})` : ''}`);
  if (failed.length) log(`Screenshots: ${path.relative(ROOT, resultsDir)}/`);
  return failed.length ? 1 : 0;
}

run().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  },
);
