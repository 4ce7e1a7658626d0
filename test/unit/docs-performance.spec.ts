import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { BENCHMARK_TABLES } from '../../scripts/docs/benchmark-tables';
import { regionOf } from '../../scripts/docs/marked-region';
import {
  FAILOVER_REGION,
  newestResult,
  OPERATIONS_DOC,
  PERFORMANCE_DOC,
  PERFORMANCE_REGION,
  renderFailoverResults,
  renderLatestResults,
} from '../../scripts/docs/performance-tables';

/** docs/performance.md's latest results are what npm run docs:performance generates from bench/results (docs/adr/0092). */
describe('the latest benchmark results', () => {
  it('are the ones generated from the committed bench/results/*.json (run npm run docs:performance when this fails)', () => {
    const committed = regionOf(fs.readFileSync(PERFORMANCE_DOC, 'utf8'), PERFORMANCE_REGION).trim();
    expect({ results: committed, fix: 'run npm run docs:performance' }).toEqual({ results: renderLatestResults(), fix: 'run npm run docs:performance' });
  });

  it("include the failover test's newest full run in docs/operations.md (run npm run docs:performance when this fails)", () => {
    const committed = regionOf(fs.readFileSync(OPERATIONS_DOC, 'utf8'), FAILOVER_REGION).trim();
    expect({ results: committed, fix: 'run npm run docs:performance' }).toEqual({ results: renderFailoverResults(), fix: 'run npm run docs:performance' });
  });

  it('take the newest result of each benchmark, skipping quick runs and runs of older code', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-results-'));
    const write = (file: string, json: object) => fs.writeFileSync(path.join(dir, file), JSON.stringify(json));
    const controlPlane = BENCHMARK_TABLES.find((b) => b.command === 'npm run bench:control-plane')!;
    const requests = BENCHMARK_TABLES.find((b) => b.command === 'npm run bench')!;
    write('control-plane.json', { startedAt: '2026-01-01T00:00:00Z' });
    write('control-plane-fresh.json', { startedAt: '2026-02-01T00:00:00Z' });
    write('control-plane-before-x.json', { startedAt: '2026-03-01T00:00:00Z' });
    write('latest.json', { startedAt: '2026-01-01T00:00:00Z', quick: false });
    write('quick.json', { startedAt: '2026-02-01T00:00:00Z', quick: true });
    const failover = BENCHMARK_TABLES.find((b) => b.command === 'npm run test:failover')!;
    write('failover-2026-01-01T00-00.json', { startedAt: '2026-01-01T00:00:00Z', quick: false });
    write('failover-2026-02-01T00-00-quick.json', { startedAt: '2026-02-01T00:00:00Z', quick: true });
    expect(newestResult(controlPlane, dir)?.file).toBe('control-plane-fresh.json');
    expect(newestResult(requests, dir)?.file).toBe('latest.json');
    expect(newestResult(failover, dir)?.file).toBe('failover-2026-01-01T00-00.json');
    fs.rmSync(dir, { recursive: true });
  });

  it('say so when a benchmark has no result yet', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-results-'));
    expect(renderLatestResults(dir)).toContain('No result in `bench/results/` yet.');
    fs.rmSync(dir, { recursive: true });
  });
});
