/**
 * `npm run test:browser`: a newcomer's first minutes, in a real browser. Starts the built service (dist/) on a fresh
 * data directory (embedded PostgreSQL, demo organisation) and a free port, opens Swagger UI in Debian's Chromium
 * (playwright-core drives it; no browser is downloaded), authorizes with the printed administrator token, and on every
 * GET operation clicks "Try it out" and "Execute" with only the pre-filled values, expecting a 2xx response code.
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

/** Authorize: the personal access token in the `token` scheme (`Authorization: Token <pat>`). */
async function authorize(page: Page, token: string): Promise<void> {
  await page.locator('.scheme-container button.authorize').first().click();
  const dialog = page.locator('.dialog-ux .modal-ux');
  await dialog.waitFor();
  const scheme = dialog.locator('.auth-container').filter({ has: page.locator('h4', { hasText: /^token\b/ }) }).first();
  await scheme.locator('input').first().fill(`Token ${token}`);
  await scheme.locator('button.authorize').click();
  await scheme.locator('button', { hasText: 'Logout' }).waitFor(); // shown once the scheme is authorized
  await dialog.locator('button.close-modal').first().click();
  await dialog.waitFor({ state: 'detached' });
}

/** Opens the collapsed tag sections currently rendered (docExpansion "none" starts with every tag closed). */
async function openRenderedTags(page: Page): Promise<void> {
  const closed = page.locator('h3.opblock-tag[data-is-open="false"]');
  for (let n = await closed.count(); n > 0; n = await closed.count()) await closed.first().click();
}

/** The GET operations Swagger UI has rendered now: it renders only those near the viewport (a virtual list). */
async function renderedGets(page: Page): Promise<{ id: string; path: string }[]> {
  // A string: evaluated in the page, where the DOM is (the project's TypeScript has no DOM types).
  return page.evaluate(`[...document.querySelectorAll('.opblock.opblock-get')].map((el) => ({
    id: el.id,
    path: el.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '',
  }))`);
}

/** Try it out + Execute on one operation; the response code Swagger UI shows. */
async function execute(op: Locator): Promise<string> {
  await op.scrollIntoViewIfNeeded();
  if (!(await op.evaluate((el) => el.classList.contains('is-open')))) await op.locator('.opblock-summary').first().click();
  const tryOut = op.locator('button.try-out__btn');
  await tryOut.waitFor();
  if ((await tryOut.innerText()).trim() === 'Try it out') await tryOut.click();
  await op.locator('button.execute').click();
  const status = op.locator('.live-responses-table tr.response td.response-col_status').first();
  await status.waitFor({ timeout: RESPONSE_TIMEOUT_MS });
  return (await status.innerText()).trim();
}

/**
 * Scrolls from the top to the bottom of the page, calling `visit` for every GET operation as it is rendered (and
 * opening collapsed tags on the way), until the bottom is reached or `finished` says so.
 */
async function scanPage(page: Page, visit: (id: string, opPath: string) => Promise<void>, finished: () => boolean): Promise<void> {
  await page.evaluate('window.scrollTo(0, 0)');
  let idleScrolls = 0;
  while (!finished() && idleScrolls < 3) {
    await openRenderedTags(page);
    const rendered = (await renderedGets(page)).filter((o) => o.path);
    for (const { id, path: opPath } of rendered) await visit(id, opPath);
    const moved = await page.evaluate<boolean>(`(() => {
      const before = window.scrollY;
      window.scrollBy(0, Math.round(window.innerHeight * 0.8));
      return window.scrollY !== before;
    })()`);
    idleScrolls = moved ? 0 : idleScrolls + 1;
    await page.waitForTimeout(150); // the virtual list renders the newly visible operations
  }
}

/** Try it out + Execute on the operation with this element id; a screenshot (at `screenshotFile()`) when it fails. */
async function tryOperation(page: Page, id: string, name: string, screenshotFile: () => string): Promise<Outcome> {
  const op = page.locator(`[id="${id}"]`).first();
  let outcome: Outcome;
  try {
    const status = await execute(op);
    outcome = { operation: name, status, ok: /^2\d\d$/.test(status) };
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
    await authorize(page, token);

    // Every GET operation of the document, found by scrolling through the page (the filter box is left empty).
    const doc = (await (await fetch(`${service.base}/v3/api-docs`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const expected = new Set(Object.entries(doc.paths).filter(([, ops]) => ops.get).map(([p]) => p));
    const done = new Set<string>();
    // Top to bottom; again (at most twice) for any operation that a layout shift kept out of view while scrolling.
    for (let pass = 0; pass < 3 && done.size < expected.size; pass++) {
      await scanPage(page, async (id, opPath) => {
        if (done.has(opPath)) return; // an operation listed under two tags is tried once
        done.add(opPath);
        const outcome = await tryOperation(page, id, `GET ${opPath}`, () => path.join(resultsDir, `${String(outcomes.length + 1).padStart(3, '0')}-${opPath.replace(/[^a-zA-Z0-9]+/g, '_').slice(0, 120)}.png`));
        outcomes.push(outcome);
        log(`${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.status.padEnd(4)} ${outcome.operation}${outcome.screenshot ? `  (${outcome.screenshot})` : ''}`);
      }, () => done.size >= expected.size);
    }
    for (const p of expected) {
      if (!done.has(p)) outcomes.push({ operation: `GET ${p}`, status: 'not found in Swagger UI', ok: false });
    }
    if (outcomes.length === 0) throw new Error('Swagger UI showed no GET operation');
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
  log(`Swagger UI Try it out: ${outcomes.length - failed.length} of ${outcomes.length} GET operations answered 2xx`);
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
