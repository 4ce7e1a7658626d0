/**
 * The bounds of alerting configurations and the shape of their problems: plain data the main thread reads (DTOs,
 * error bodies) without loading the YAML parser, which only the executor's worker threads run on user input
 * (alerting-validation.ts).
 */

/** Bounds of an alerting configuration (documented in the DTO and docs/conventions.md). */
export const ALERTING_MAX_FILE_BYTES = 128 * 1024;
/** All YAML of one request together (alertingConfig, rule and template files). */
export const ALERTING_MAX_TOTAL_BYTES = 256 * 1024;
/** YAML aliases per document; anchors and aliases are rare in these files and expand exponentially. */
export const ALERTING_MAX_ALIASES = 100;
export const ALERTING_MAX_FILES = 50;
export const ALERTING_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface AlertingFilesInput {
  alertingConfig?: string | null;
  ruleFiles?: Record<string, unknown> | null;
  templateFiles?: Record<string, unknown> | null;
}

export interface AlertingProblem {
  /** `alertingConfig`, `ruleFiles.<name>` or `templateFiles.<name>`. */
  file: string;
  line?: number;
  column?: number;
  message: string;
}

/** Human sentence for one problem: "ruleFiles.x.yaml line 3, column 5: ...". */
export function describeProblem(p: AlertingProblem): string {
  const where = p.line ? ` line ${p.line}${p.column ? `, column ${p.column}` : ''}` : '';
  return `${p.file}${where}: ${p.message}`;
}
