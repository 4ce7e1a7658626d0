import * as fs from 'fs';
import * as path from 'path';
import GithubSlugger from 'github-slugger';
import { lexer, type Token, type Tokens } from 'marked';

/** Headings of a Markdown document, in order, with the anchors GitHub gives them (duplicates get -1, -2, ...). */
export function headingsOf(markdown: string): { depth: number; text: string; anchor: string }[] {
  const slugger = new GithubSlugger();
  return lexer(markdown)
    .filter((t): t is Tokens.Heading => t.type === 'heading')
    .map((h) => ({ depth: h.depth, text: plainText(h.tokens), anchor: slugger.slug(plainText(h.tokens)) }));
}

/** Every link target of a document outside code (paragraphs, lists, tables, headings). */
export function linksOf(markdown: string): string[] {
  const links: string[] = [];
  const walk = (tokens: Token[] | undefined) => {
    for (const t of tokens ?? []) {
      if (t.type === 'link') links.push((t as Tokens.Link).href);
      const nested = t as { tokens?: Token[]; items?: Tokens.ListItem[]; header?: Tokens.TableCell[]; rows?: Tokens.TableCell[][] };
      walk(nested.tokens);
      for (const item of nested.items ?? []) walk(item.tokens);
      for (const cell of nested.header ?? []) walk(cell.tokens);
      for (const row of nested.rows ?? []) for (const cell of row) walk(cell.tokens);
    }
  };
  walk(lexer(markdown));
  return links;
}

/** The rows of the first table under a heading whose text is `heading`, as cell texts (Markdown source). */
export function tableUnder(markdown: string, heading: string): string[][] {
  const tokens = lexer(markdown);
  const at = tokens.findIndex((t) => t.type === 'heading' && plainText((t as Tokens.Heading).tokens) === heading);
  if (at < 0) return [];
  for (const t of tokens.slice(at + 1)) {
    if (t.type === 'heading') break;
    if (t.type === 'table') return (t as Tokens.Table).rows.map((row) => row.map((cell) => cell.text));
  }
  return [];
}

/** Why a relative link `href` of the Markdown file `file` does not resolve (file, and heading when it names one), or undefined. */
export function brokenLink(file: string, href: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return undefined; // http:, https:, mailto:
  const [target, anchor] = href.split('#', 2);
  const resolved = target ? path.resolve(path.dirname(file), decodeURIComponent(target)) : file;
  if (!fs.existsSync(resolved)) return `${href}: no such file`;
  if (anchor === undefined || anchor === '') return undefined;
  if (fs.statSync(resolved).isDirectory() || !resolved.endsWith('.md')) return `${href}: an anchor into a file that is not Markdown`;
  const anchors = headingsOf(fs.readFileSync(resolved, 'utf8')).map((h) => h.anchor);
  return anchors.includes(anchor) ? undefined : `${href}: no heading with anchor #${anchor} in ${path.relative(path.dirname(file), resolved)}`;
}

/** Words as `wc -w` counts them: runs of non-space characters. */
export function wordCount(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function plainText(tokens: Token[]): string {
  return tokens.map((t) => ('tokens' in t && t.tokens ? plainText(t.tokens) : t.type === 'codespan' ? (t as Tokens.Codespan).text : 'text' in t ? t.text : '')).join('');
}
