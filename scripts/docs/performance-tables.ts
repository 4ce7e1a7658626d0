import * as fs from 'fs';
import * as path from 'path';
import { BENCHMARK_TABLES, FAILOVER_RESULTS, type BenchmarkTable, type Json } from './benchmark-tables';
import { type Region, withRegion } from './marked-region';

/** The latest results of docs/performance.md, generated from the newest result of each benchmark in bench/results. */
export const PERFORMANCE_DOC = path.resolve(__dirname, '../../docs/performance.md');
export const RESULTS_DIR = path.resolve(__dirname, '../../bench/results');
export const PERFORMANCE_REGION: Region = { name: 'latest-results', command: 'npm run docs:performance' };
/** docs/operations.md's Failover section shows the failover test's newest table too (written by the same command). */
export const OPERATIONS_DOC = path.resolve(__dirname, '../../docs/operations.md');
export const FAILOVER_REGION: Region = { name: 'failover-results', command: 'npm run docs:performance' };

/** The newest accepted result of a benchmark, with its file name. */
export function newestResult(benchmark: BenchmarkTable, dir = RESULTS_DIR): { file: string; result: Json; at: string } | undefined {
  return fs
    .readdirSync(dir)
    .filter((file) => benchmark.files.test(file))
    .map((file) => ({ file, result: JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Json }))
    .filter(({ file, result }) => benchmark.measuredAt(result) && (benchmark.accepts?.(result, file) ?? true))
    .map((r) => ({ ...r, at: benchmark.measuredAt(r.result)! }))
    .sort((a, b) => b.at.localeCompare(a.at) || a.file.localeCompare(b.file))[0];
}

export function renderLatestResults(dir = RESULTS_DIR): string {
  return BENCHMARK_TABLES.map((benchmark) => {
    const newest = newestResult(benchmark, dir);
    const heading = `### ${benchmark.title} (\`${benchmark.command}\`)`;
    if (!newest) return `${heading}\n\nNo result in \`bench/results/\` yet.`;
    const when = `${newest.at.slice(0, 10)} ${newest.at.slice(11, 16)} UTC`;
    return `${heading}\n\n\`bench/results/${newest.file}\`, run ${when}.\n\n${benchmark.render(newest.result)}`;
  }).join('\n\n');
}

/** The failover test's newest full run, as docs/operations.md shows it. */
export function renderFailoverResults(dir = RESULTS_DIR): string {
  const failover = BENCHMARK_TABLES.find((b) => b.files === FAILOVER_RESULTS)!;
  const newest = newestResult(failover, dir);
  if (!newest) return 'No result in `bench/results/` yet.';
  return `\`bench/results/${newest.file}\`, run ${newest.at.slice(0, 10)} ${newest.at.slice(11, 16)} UTC.\n\n${failover.render(newest.result)}`;
}

if (require.main === module) {
  fs.writeFileSync(PERFORMANCE_DOC, withRegion(fs.readFileSync(PERFORMANCE_DOC, 'utf8'), PERFORMANCE_REGION, renderLatestResults()));
  fs.writeFileSync(OPERATIONS_DOC, withRegion(fs.readFileSync(OPERATIONS_DOC, 'utf8'), FAILOVER_REGION, renderFailoverResults()));
  process.stdout.write(`wrote the latest results of ${BENCHMARK_TABLES.length} benchmarks into docs/performance.md, and the failover table into docs/operations.md\n`);
}
