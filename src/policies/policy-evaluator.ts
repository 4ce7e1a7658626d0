import { Injectable } from '@nestjs/common';
import { CompiledPolicyExpression, PolicyLanguage } from './policy-language';
import type { PolicyInput } from './policy-variables';

/** What an evaluation needs of a policy: plain data, so the work can move to a worker thread as it is. */
export interface PolicySource {
  expression: string;
  message: string;
  messageExpression: string | null;
}

/** One policy on one input: passed, or failed with the message to show. */
export interface PolicyResult {
  passed: boolean;
  message: string | null;
}

/**
 * Evaluates policies on inputs: `results[i][j]` is policy j on input i. The interface is asynchronous and
 * takes plain data so the evaluation can run on the bounded executor for expensive work (hardening issue 25)
 * without changing its callers; until then it runs inline, which the write-time cost bound keeps cheap
 * (docs/adr/0078-policy-enforcement.md).
 */
export abstract class PolicyEvaluator {
  abstract evaluate(policies: PolicySource[], inputs: PolicyInput[]): Promise<PolicyResult[][]>;
  /** The fields of `object`/`oldObject` the policies read (expressions and message expressions); null: all. */
  abstract objectFields(policies: PolicySource[]): Set<string> | null;
}

/** Compiled programs kept per expression text (bounded; the oldest is dropped first). */
const MAX_COMPILED = 500;

/** Evaluation on the calling thread. An expression that fails to evaluate counts as failing (fail closed). */
@Injectable()
export class InlinePolicyEvaluator extends PolicyEvaluator {
  private readonly language = new PolicyLanguage();
  private readonly compiled = new Map<string, CompiledPolicyExpression>();

  async evaluate(policies: PolicySource[], inputs: PolicyInput[]): Promise<PolicyResult[][]> {
    const programs = policies.map((p) => ({
      test: this.program(p.expression),
      message: p.messageExpression ? this.program(p.messageExpression) : null,
      fallback: p.message,
    }));
    return inputs.map((input) =>
      programs.map((p) => {
        let outcome: unknown;
        try {
          outcome = p.test(input);
        } catch (err) {
          return { passed: false, message: `${p.fallback} (the expression could not be evaluated: ${summary(err)})` };
        }
        if (outcome === true) return { passed: true, message: null };
        if (outcome !== false) return { passed: false, message: `${p.fallback} (the expression evaluated to ${typeof outcome}, not bool)` };
        if (!p.message) return { passed: false, message: p.fallback };
        try {
          const text = p.message(input);
          return { passed: false, message: typeof text === 'string' && text.trim() ? text.slice(0, 1024) : p.fallback };
        } catch {
          return { passed: false, message: p.fallback };
        }
      }),
    );
  }

  objectFields(policies: PolicySource[]): Set<string> | null {
    return this.language.objectFields(policies.flatMap((p) => (p.messageExpression ? [p.expression, p.messageExpression] : [p.expression])));
  }

  private program(source: string): CompiledPolicyExpression {
    let program = this.compiled.get(source);
    if (program) {
      this.compiled.delete(source); // most recently used last
    } else {
      program = this.language.compile(source);
      if (this.compiled.size >= MAX_COMPILED) this.compiled.delete(this.compiled.keys().next().value!);
    }
    this.compiled.set(source, program);
    return program;
  }
}

function summary(err: unknown): string {
  const e = err as { summary?: string; message?: string };
  return (e.summary ?? String(e.message ?? err).split('\n')[0]).slice(0, 300);
}
