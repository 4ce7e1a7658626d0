import { Injectable } from '@nestjs/common';
import type { FieldErrorDto } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { Executor, ExecutorAdmission, executorKey } from '../executor/executor';
import type { PolicyTasks } from './policy-tasks';
import type { PolicyResult, PolicySource } from './policy-language';
import type { PolicySchemaShare } from './policy-schema';
import { PolicyInput, policyVariableSchema } from './policy-variables';

export type { PolicyResult, PolicySource };

/** Inputs evaluated per executor task: a scan batch is split so each task stays well within its deadline. */
export const INPUTS_PER_TASK = 50;
/** Projections kept per expression text (bounded; the oldest is dropped first). */
const MAX_PROJECTIONS = 500;

/**
 * Everything about a user's policy expression that parses or runs it (the write-time check, the projection of the
 * cluster fields it reads, its evaluation) happens on the executor's worker threads (src/executor), under the
 * organisation's fair queue, the per-task deadline and the workers' heap bound; the event loop only posts plain data
 * (docs/architecture.md, "Expensive work on user input"). `organisationId` null is the platform's own work (platform
 * policies written by platform administrators).
 */
@Injectable()
export class PolicyEvaluator {
  private readonly projections = new Map<string, string[] | null>();

  constructor(
    private readonly executor: Executor<PolicyTasks>,
    config: AppConfig,
  ) {
    // The worker threads declare the variables' CEL types from this, without loading the DTO classes.
    const share: PolicySchemaShare = { schema: policyVariableSchema(), runtimeCostLimit: config.POLICY_RUNTIME_COST_LIMIT };
    executor.shareWithWorkers('policies', share);
  }

  /** The write-time check of a policy's expressions; when valid, also the cluster fields they read. */
  async check(organisationId: number | null, body: Pick<PolicySource, 'expression' | 'messageExpression'>, admission?: ExecutorAdmission): Promise<FieldErrorDto[]> {
    const { errors, fields } = await this.executor.run(
      executorKey(organisationId),
      'policies.check',
      { expression: body.expression, messageExpression: body.messageExpression },
      admission,
    );
    if (!errors.length) this.remember(sourcesOf([body]), fields);
    return errors;
  }

  /**
   * The fields of `object`/`oldObject` the policies read (expressions and message expressions); null: all. Known
   * after the first time for the same expressions (the answer depends on their text alone).
   */
  async objectFields(
    organisationId: number | null,
    policies: Pick<PolicySource, 'expression' | 'messageExpression'>[],
    admission?: ExecutorAdmission,
  ): Promise<Set<string> | null> {
    const sources = sourcesOf(policies);
    const key = sources.join('\0');
    let fields = this.projections.get(key);
    if (fields === undefined) {
      fields = await this.executor.run(executorKey(organisationId), 'policies.objectFields', sources, admission);
      this.remember(sources, fields);
    }
    return fields ? new Set(fields) : null;
  }

  /**
   * `results[i][j]` is policy j on input i. An expression that cannot be evaluated (an error, not a bool, its budget
   * spent) answers `error`. A task the executor stopped (its deadline, its worker's heap: 422), a full queue (429)
   * or shutdown (503) is thrown: the caller decides (a change applies each policy's failurePolicy).
   */
  async evaluate(organisationId: number | null, policies: PolicySource[], inputs: PolicyInput[], admission?: ExecutorAdmission): Promise<PolicyResult[][]> {
    const plain = policies.map((p) => ({ expression: p.expression, message: p.message, messageExpression: p.messageExpression }));
    const results: PolicyResult[][] = [];
    for (let i = 0; i < inputs.length; i += INPUTS_PER_TASK) {
      const chunk = inputs.slice(i, i + INPUTS_PER_TASK);
      results.push(...(await this.executor.run(executorKey(organisationId), 'policies.evaluate', { policies: plain, inputs: chunk }, admission)));
    }
    return results;
  }

  private remember(sources: string[], fields: string[] | null): void {
    const key = sources.join('\0');
    this.projections.delete(key);
    if (this.projections.size >= MAX_PROJECTIONS) this.projections.delete(this.projections.keys().next().value!);
    this.projections.set(key, fields);
  }
}

const sourcesOf = (policies: Pick<PolicySource, 'expression' | 'messageExpression'>[]): string[] =>
  policies.flatMap((p) => (p.messageExpression ? [p.expression, p.messageExpression] : [p.expression]));
