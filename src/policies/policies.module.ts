import { Module } from '@nestjs/common';
import { ClusterPoliciesController } from './cluster-policies.controller';
import { ClusterPoliciesService } from './cluster-policies.service';
import { ClusterPolicyEnforcer } from './cluster-policy-enforcer';
import { PolicyEvaluator } from './policy-evaluator';
import { PolicyInputs } from './policy-inputs';
import { PolicyScanService } from './policy-scan.service';

/**
 * Cluster policies (CEL guardrails): organisation and platform policies, the enforcer every cluster change
 * calls, and the evaluate/violations scans. `PolicyEvaluator` hands every check and evaluation to the executor's worker threads.
 */
@Module({
  controllers: [ClusterPoliciesController],
  providers: [ClusterPoliciesService, ClusterPolicyEnforcer, PolicyInputs, PolicyScanService, PolicyEvaluator],
  exports: [ClusterPolicyEnforcer, ClusterPoliciesService],
})
export class PoliciesModule {}
