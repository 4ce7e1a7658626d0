import * as fs from 'fs';
import * as path from 'path';
import { lexer, type Tokens } from 'marked';
import { type Region, withRegion } from './marked-region';

/** The decision records (docs/adr/NNNN-title.md, Michael Nygard's form) and their index in docs/adr/README.md. */
export const ADR_DIR = path.resolve(__dirname, '../../docs/adr');
export const ADR_INDEX = path.join(ADR_DIR, 'README.md');
export const ADR_INDEX_REGION: Region = { name: 'adr-index', command: 'npm run docs:adr' };

export interface DecisionRecord {
  file: string;
  number: number;
  title: string;
  /** The Status section's text: `Accepted` (perhaps `Accepted. Supersedes [...]`) or `Superseded by [NNNN](...)`. */
  status: string;
  /** The section headings at depth 2, in order. */
  sections: string[];
  /** The first sentence of the Decision section, without Markdown emphasis. */
  summary: string;
}

export function readRecords(dir = ADR_DIR): DecisionRecord[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}-.+\.md$/.test(f))
    .sort()
    .map((file) => parseRecord(file, fs.readFileSync(path.join(dir, file), 'utf8')));
}

export function parseRecord(file: string, markdown: string): DecisionRecord {
  const tokens = lexer(markdown);
  const title = tokens.find((t): t is Tokens.Heading => t.type === 'heading' && t.depth === 1);
  const m = /^(\d+)\. (.+)$/.exec(title?.text ?? '');
  const sectionText = (name: string) => {
    const at = tokens.findIndex((t) => t.type === 'heading' && (t as Tokens.Heading).depth === 2 && (t as Tokens.Heading).text === name);
    if (at < 0) return '';
    const end = tokens.findIndex((t, i) => i > at && t.type === 'heading' && (t as Tokens.Heading).depth <= 2);
    return tokens.slice(at + 1, end < 0 ? undefined : end).map((t) => t.raw).join('').trim();
  };
  return {
    file,
    number: m ? Number(m[1]) : NaN,
    title: m ? m[2] : '',
    status: sectionText('Status'),
    sections: tokens.filter((t): t is Tokens.Heading => t.type === 'heading' && t.depth === 2).map((h) => h.text),
    summary: firstSentence(sectionText('Decision')),
  };
}

/** The superseding record's number, when the status says `Superseded by`. */
export function supersededBy(record: DecisionRecord): number | undefined {
  const m = /^Superseded by \[(\d{4})\]\((\d{4})-[^)]+\.md\)/.exec(record.status);
  return m ? Number(m[1]) : undefined;
}

export function renderIndex(records: DecisionRecord[]): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  return [
    '| # | Decision | Status | In one line |',
    '|---:|---|---|---|',
    ...records.map((r) => {
      const status = supersededBy(r) !== undefined ? r.status.split('\n')[0] : 'Accepted';
      return `| ${String(r.number).padStart(4, '0')} | [${cell(r.title)}](${r.file}) | ${status} | ${cell(r.summary)} |`;
    }),
  ].join('\n');
}

function firstSentence(text: string): string {
  const plain = text
    .replace(/^\s*-\s+/, '')
    .replace(/\*\*([^*]+)\*\*:?\s*/g, '$1: ')
    .replace(/\[([^\]]+)\]\([^)]+\)/g, '$1')
    .replace(/:\s*:/g, ':')
    .replace(/\s+/g, ' ')
    .trim();
  const masked = plain.replace(/\b(e\.g|i\.e|etc|vs)\./g, (s) => s.replace(/\./g, '\u0000'));
  const end = masked.search(/\.(\s|$)/);
  const sentence = (end < 0 ? masked : masked.slice(0, end + 1)).replace(/\u0000/g, '.');
  return sentence.length <= 200 ? sentence : `${sentence.slice(0, sentence.lastIndexOf(' ', 197))} …`;
}

if (require.main === module) {
  const text = fs.readFileSync(ADR_INDEX, 'utf8');
  fs.writeFileSync(ADR_INDEX, withRegion(text, ADR_INDEX_REGION, renderIndex(readRecords())));
  process.stdout.write(`wrote the index of ${readRecords().length} decision records into docs/adr/README.md\n`);
}
