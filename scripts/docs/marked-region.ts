/**
 * Generated parts of a Markdown document sit between two markers, so a script can rewrite them and a test can check
 * that the committed text is what the script writes (docs/adr/0092-docs-generated-from-code.md):
 *
 *   <!-- generated:NAME:start (npm run COMMAND) -->
 *   ...
 *   <!-- generated:NAME:end -->
 */
export interface Region {
  name: string;
  /** The npm script that writes the region, named in the marker and in a stale test's message. */
  command: string;
}

const startMarker = (r: Region) => `<!-- generated:${r.name}:start (${r.command}) -->`;
const endMarker = (r: Region) => `<!-- generated:${r.name}:end -->`;

/** The text between the markers (without them); throws when the document lacks them. */
export function regionOf(text: string, region: Region): string {
  const start = text.indexOf(startMarker(region));
  const end = text.indexOf(endMarker(region));
  if (start < 0 || end < start) throw new Error(`the markers of the generated region "${region.name}" are missing; run ${region.command}`);
  return text.slice(start + startMarker(region).length, end);
}

/** The document with the region's content replaced by `body` (one newline after the start, one before the end). */
export function withRegion(text: string, region: Region, body: string): string {
  regionOf(text, region);
  const start = text.indexOf(startMarker(region));
  const end = text.indexOf(endMarker(region));
  return `${text.slice(0, start)}${startMarker(region)}\n${body.trimEnd()}\n${text.slice(end)}`;
}

/** A fresh region, markers included, for a document that does not have it yet. */
export function newRegion(region: Region, body: string): string {
  return `${startMarker(region)}\n${body.trimEnd()}\n${endMarker(region)}`;
}
