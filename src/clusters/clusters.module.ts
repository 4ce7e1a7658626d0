import { Module } from '@nestjs/common';
import { ClustersAdminController } from '../admin/clusters-admin.controller';
import { ProvisioningModule } from '../provisioning/provisioning.module';
import { AuthModule } from '../auth/auth.module';
import { PoliciesModule } from '../policies/policies.module';
import { NodeJoinController, NodeRegistrationsController } from './byon/node-join.controller';
import { NodeJoinService } from './byon/node-join.service';
import { ClusterAccessController } from './cluster-access.controller';
import { ClusterAccessService } from './cluster-access.service';
import { ClusterCatalog } from './cluster-catalog';
import { ClusterLookup } from './cluster-lookup';
import { ClusterMetrics } from './cluster-metrics';
import { ClusterRules } from './cluster-rules';
import { ClusterView } from './cluster-view';
import { ClustersQueryService } from './clusters-query.service';
import { ClustersController } from './clusters.controller';
import { NodePoolsController } from './node-pools.controller';
import { NodePoolsService } from './node-pools.service';
import { CreateClusterUseCase } from './use-cases/create-cluster.use-case';
import { UpdateClusterUseCase } from './use-cases/update-cluster.use-case';

/** Clusters, node pools and add-ons; the provisioning reconciler comes with it. */
@Module({
  imports: [ProvisioningModule, AuthModule, PoliciesModule],
  controllers: [ClustersController, NodePoolsController, ClustersAdminController, ClusterAccessController, NodeJoinController, NodeRegistrationsController],
  providers: [
    ClusterCatalog,
    ClusterLookup,
    ClusterMetrics,
    ClusterRules,
    ClusterView,
    ClustersQueryService,
    CreateClusterUseCase,
    UpdateClusterUseCase,
    NodePoolsService,
    ClusterAccessService,
    NodeJoinService,
  ],
  exports: [ClustersQueryService, ClusterView, ProvisioningModule, CreateClusterUseCase],
})
export class ClustersModule {}
