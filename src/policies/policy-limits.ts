/**
 * The bounds of cluster policy expressions (docs/policies.md, "Limits"). Plain constants: the request DTOs and the
 * main thread read them without loading the CEL engine, which only the executor's worker threads load
 * (src/policies/policy-language.ts).
 */

/** Longest expression or message expression accepted. */
export const MAX_EXPRESSION_LENGTH = 2048;
/** Parser limits: nodes of the syntax tree, nesting, literal sizes, call arguments. */
export const MAX_AST_NODES = 400;
export const PARSER_LIMITS = { maxAstNodes: MAX_AST_NODES, maxDepth: 32, maxListElements: 100, maxMapEntries: 100, maxCallArguments: 8 } as const;
/** Comprehensions (all, exists, exists_one, map, filter) nested deeper than this are refused. */
export const MAX_COMPREHENSION_NESTING = 2;
/** Longest `matches()` pattern. */
export const MAX_PATTERN_LENGTH = 256;

/**
 * Cost units (the same at write time and at run time): one per evaluated node of the syntax tree, plus
 * SIZE_COST per character, element or entry an operation builds or scans (concatenation, string functions,
 * comparisons of strings and lists, list literals, `in` over a list), like cel-go's 0.1 per character.
 */
export const SIZE_COST = 0.1;
/** The write-time bound: the estimated worst case of one expression, in cost units. */
export const MAX_ESTIMATED_COST = 100_000;
/** `matches()` scans with RE2 (`re2js`), slower per character than a native scan: this many times SIZE_COST. */
export const REGEX_SCAN_FACTOR = 2;
/**
 * A timestamp accessor given a time zone (`getHours('Europe/Berlin')`) builds an `Intl` formatter on each call,
 * about 40 microseconds: it costs this many units.
 */
export const TIME_ZONE_CALL_COST = 1000;
/**
 * `duration()` parses with a backtracking regular expression whose time grows with the cube of its input's length
 * (a 4,096-digit string takes seconds, 32 digits about 75 microseconds): its argument is at most this long (durations
 * are short: '1h30m'), and a call costs the cube of that length / 10 units.
 */
export const MAX_DURATION_LENGTH = 32;
export const durationCallCost = (length: number): number => Math.ceil(Math.min(length, MAX_DURATION_LENGTH) ** 3 / 10);
/**
 * The largest value (string characters, bytes, list elements, map entries) an expression may build, at write time
 * (estimated) and at run time (measured).
 */
export const MAX_VALUE_SIZE = 1 << 20;
/** The run-time budget of one evaluation (one expression on one input), in cost units (POLICY_RUNTIME_COST_LIMIT). */
export const DEFAULT_RUNTIME_COST_LIMIT = 1_000_000;

/**
 * What the write-time estimate assumes of the inputs (the write bounds of clusters and node pools): strings at most
 * 4,096 characters (label and annotation values, add-on values), lists and maps at most 100 entries (labels,
 * annotations, taints, IP allow-lists, add-ons; node pools 50 at creation). Larger real inputs are bounded by the
 * run-time budget.
 */
export const INPUT_STRING_LENGTH = 4096;
export const INPUT_COLLECTION_SIZE = 100;

/** What a saved policy does when its expression cannot be evaluated (an error, its budget or time spent). */
export const FAILURE_POLICIES = ['Fail', 'Ignore'] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];
