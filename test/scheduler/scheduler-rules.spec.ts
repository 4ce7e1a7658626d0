import * as fs from 'fs';
import * as path from 'path';
import { MODULE_METADATA } from '@nestjs/common/constants';
import { AnnounceRule } from '../../src/scheduler/rules/announce.rule';
import { CloseObsoleteRule } from '../../src/scheduler/rules/close-obsolete.rule';
import { FinishRule } from '../../src/scheduler/rules/finish.rule';
import { MissRule } from '../../src/scheduler/rules/miss.rule';
import { PlanNewRule } from '../../src/scheduler/rules/plan-new.rule';
import { ReplanRule } from '../../src/scheduler/rules/replan.rule';
import { SequenceRule } from '../../src/scheduler/rules/sequence.rule';
import { StartRule } from '../../src/scheduler/rules/start.rule';
import { SCHEDULER_RULES } from '../../src/scheduler/scheduler-rule';
import { SchedulerModule } from '../../src/scheduler/scheduler.module';

/** The rules a pass runs (docs/architecture.md "Background work" and "Adding a scheduler rule"). */
describe('scheduler rules', () => {
  const providers: unknown[] = Reflect.getMetadata(MODULE_METADATA.PROVIDERS, SchedulerModule);
  const registered = (providers.find((p) => (p as { provide?: unknown }).provide === SCHEDULER_RULES) as { inject: unknown[] }).inject;

  it('run in the documented order', () => {
    expect(registered).toEqual([CloseObsoleteRule, SequenceRule, ReplanRule, PlanNewRule, AnnounceRule, StartRule, FinishRule, MissRule]);
  });

  it('are one class per file under src/scheduler/rules/, each registered and provided', () => {
    const dir = path.resolve(__dirname, '../../src/scheduler/rules');
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files.every((f) => f.endsWith('.rule.ts'))).toBe(true);
    const classes = files.map((f) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const exported = Object.values(require(path.join(dir, f)) as Record<string, unknown>).filter((v) => typeof v === 'function');
      expect(exported).toHaveLength(1);
      return exported[0];
    });
    expect(new Set(classes)).toEqual(new Set(registered));
    for (const rule of registered) expect(providers).toContain(rule);
  });
});
