import { Module } from '@nestjs/common';
import { PoliciesModule } from '../policies/policies.module';
import { AnnounceRule } from './rules/announce.rule';
import { CloseObsoleteRule } from './rules/close-obsolete.rule';
import { FinishRule } from './rules/finish.rule';
import { MissRule } from './rules/miss.rule';
import { PlanNewRule } from './rules/plan-new.rule';
import { ReplanRule } from './rules/replan.rule';
import { SequenceRule } from './rules/sequence.rule';
import { StartRule } from './rules/start.rule';
import { SCHEDULER_RULES, SchedulerRule } from './scheduler-rule';
import { SchedulerRunner } from './scheduler-runner';
import { SchedulerSql } from './shared/scheduler-sql';
import { UpgradeTransitions } from './shared/upgrade-transitions';
import { UpgradeSchedulerService } from './upgrade-scheduler.service';

/**
 * The scheduler's rules in the order a pass runs them: each sees what the ones before it changed. Closing
 * obsolete upgrades comes before planning, so a superseded upgrade is replaced in the same pass; holding and
 * moving come before announcing and starting, so nothing held or in an exclusion is announced or started.
 */
const RULES = [CloseObsoleteRule, SequenceRule, ReplanRule, PlanNewRule, AnnounceRule, StartRule, FinishRule, MissRule];

/** Background transitions of scheduled cluster upgrades (every SCHEDULER_INTERVAL_SECONDS). */
@Module({
  imports: [PoliciesModule],
  providers: [
    SchedulerSql,
    UpgradeTransitions,
    ...RULES,
    { provide: SCHEDULER_RULES, useFactory: (...rules: SchedulerRule[]) => rules, inject: RULES },
    SchedulerRunner,
    UpgradeSchedulerService,
  ],
  exports: [UpgradeSchedulerService],
})
export class SchedulerModule {}
