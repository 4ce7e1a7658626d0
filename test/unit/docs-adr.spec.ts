import * as fs from 'fs';
import * as path from 'path';
import { ADR_DIR, ADR_INDEX, ADR_INDEX_REGION, readRecords, renderIndex, supersededBy } from '../../scripts/docs/adr-index';
import { regionOf } from '../../scripts/docs/marked-region';
import { brokenLink, linksOf, tableUnder } from '../../scripts/docs/markdown';

/**
 * The decision records (docs/adr/0001-record-architecture-decisions.md): Nygard's four parts, a valid status,
 * superseded records linked both ways, an index that is current, and every heading of the old docs/decisions.md
 * mapped to where its content lives now.
 */
const records = readRecords();
const OLD_HEADINGS = 47; // the headings of docs/decisions.md when it was converted (its title included)

describe('decision records', () => {
  it('are numbered files in Nygard form: Status, Context, Decision, Consequences', () => {
    expect(records.length).toBeGreaterThan(0);
    for (const r of records) {
      expect({ file: r.file, number: r.number, title: !!r.title, sections: r.sections }).toEqual({
        file: r.file,
        number: Number(r.file.slice(0, 4)),
        title: true,
        sections: ['Status', 'Context', 'Decision', 'Consequences'],
      });
    }
    expect(new Set(records.map((r) => r.number)).size).toBe(records.length);
  });

  it('are short: a screen or two each', () => {
    const long = records.filter((r) => fs.readFileSync(path.join(ADR_DIR, r.file), 'utf8').split('\n').length > 70).map((r) => r.file);
    expect(long).toEqual([]);
  });

  it('are Accepted, or Superseded by an existing record that says what it supersedes', () => {
    for (const r of records) {
      const next = supersededBy(r);
      if (next === undefined) {
        expect({ file: r.file, status: /^Accepted(\. Supersedes (\[\d{4}\]\(\d{4}-[^)]+\.md\)(, )?)+\.)?$/.test(r.status) }).toEqual({ file: r.file, status: true });
        continue;
      }
      const successor = records.find((s) => s.number === next);
      expect({ file: r.file, successor: successor?.file ?? 'missing', linksBack: successor?.status.includes(`[${r.file.slice(0, 4)}](${r.file})`) }).toEqual({
        file: r.file,
        successor: successor?.file ?? 'missing',
        linksBack: true,
      });
    }
  });

  it('have an index in docs/adr/README.md that is current (run npm run docs:adr when this fails)', () => {
    const committed = regionOf(fs.readFileSync(ADR_INDEX, 'utf8'), ADR_INDEX_REGION).trim();
    expect({ index: committed, fix: 'run npm run docs:adr' }).toEqual({ index: renderIndex(records), fix: 'run npm run docs:adr' });
  });

  it('map every heading of the old docs/decisions.md to records or sections that exist', () => {
    const readme = fs.readFileSync(ADR_INDEX, 'utf8');
    const rows = tableUnder(readme, 'Where docs/decisions.md went');
    expect(rows).toHaveLength(OLD_HEADINGS);
    const problems: string[] = [];
    for (const [heading, , targets] of rows) {
      const links = linksOf(targets);
      if (!links.length) problems.push(`${heading}: no target`);
      for (const href of links) {
        const broken = brokenLink(ADR_INDEX, href);
        if (broken) problems.push(`${heading}: ${broken}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
