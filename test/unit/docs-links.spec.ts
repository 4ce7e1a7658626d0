import * as fs from 'fs';
import * as path from 'path';
import { brokenLink, linksOf, wordCount } from '../../scripts/docs/markdown';

/**
 * The README is read in ten minutes and everything else is one link away (docs/adr/0092-docs-generated-from-code.md):
 * it stays under 1,500 words, and every relative link of README.md and docs/ (records included) resolves to an
 * existing file and, where it names one, heading.
 */
const ROOT = path.resolve(__dirname, '../..');
const README_WORD_LIMIT = 1500;

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(full) : e.name.endsWith('.md') ? [full] : [];
  });
}

describe('README and docs', () => {
  it(`README.md stays under ${README_WORD_LIMIT} words`, () => {
    const words = wordCount(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    expect({ words, underLimit: words < README_WORD_LIMIT }).toEqual({ words, underLimit: true });
  });

  it('every relative link in README.md, CHANGELOG.md, deploy/README.md and docs/ resolves to an existing file and heading', () => {
    const files = [path.join(ROOT, 'README.md'), path.join(ROOT, 'CHANGELOG.md'), path.join(ROOT, 'deploy/README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];
    const broken = files.flatMap((file) =>
      linksOf(fs.readFileSync(file, 'utf8'))
        .map((href) => brokenLink(file, href))
        .filter((problem): problem is string => !!problem)
        .map((problem) => `${path.relative(ROOT, file)}: ${problem}`),
    );
    expect(broken).toEqual([]);
  });

  it('finds a broken link when there is one', () => {
    const readme = path.join(ROOT, 'README.md');
    expect(brokenLink(readme, 'docs/no-such-file.md')).toMatch(/no such file/);
    expect(brokenLink(readme, 'docs/operations.md#no-such-heading')).toMatch(/no heading/);
    expect(brokenLink(readme, 'docs/operations.md#walk-through')).toBeUndefined();
    expect(brokenLink(readme, 'https://example.com/x')).toBeUndefined();
  });
});
