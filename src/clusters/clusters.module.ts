import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
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

/** Clusters, node pools and add-ons (the provisioning reconciler that drives them: ProvisioningModule). */
@Module({
  imports: [AuthModule],
  controllers: [ClustersController, NodePoolsController, ClusterAccessController, NodeJoinController, NodeRegistrationsController],
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
  exports: [ClustersQueryService, ClusterView, CreateClusterUseCase, UpdateClusterUseCase],
})
export class ClustersModule {}
