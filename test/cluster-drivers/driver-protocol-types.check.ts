/**
 * The compiler's half of test/cluster-drivers/driver-protocol.spec.ts: every schema of the driver protocol's OpenAPI
 * document (as openapi-typescript generates it) and the contract type of the same name are assignable both ways, so
 * a field added, removed, renamed or retyped on either side fails `npm run typecheck`. Not a test file: only compiled.
 */
import type * as Contract from '../../src/cluster-drivers/driver-contract';
import type { components } from './driver-protocol-types';

type S = components['schemas'];
/** Compiles only when A and B are assignable both ways. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const same = <T extends true>(_: T): void => undefined;

same<Same<S['DriverNodeType'], Contract.DriverNodeType>>(true);
same<Same<S['DriverTaint'], Contract.DriverTaint>>(true);
same<Same<S['DesiredNodePool'], Contract.DesiredNodePool>>(true);
same<Same<S['DesiredAddon'], Contract.DesiredAddon>>(true);
same<Same<S['DesiredClusterSpec'], Contract.DesiredClusterSpec>>(true);
same<Same<S['DriverCloudAccount'], Contract.DriverCloudAccount>>(true);
same<Same<S['DriverOperation'], Contract.DriverOperation>>(true);
same<Same<S['ApplyRequest'], Contract.ApplyRequest>>(true);
same<Same<S['DeleteRequest'], Contract.DeleteRequest>>(true);
same<Same<S['ObserveRequest'], Contract.ObserveRequest>>(true);
same<Same<S['ObserveManyRequest'], Contract.ObserveManyRequest>>(true);
same<Same<S['DriverError'], Contract.DriverError>>(true);
same<Same<S['ObservedNodePool'], Contract.ObservedNodePool>>(true);
same<Same<S['ObservedCondition'], Contract.ObservedCondition>>(true);
same<Same<S['ClusterObservation'], Contract.ClusterObservation>>(true);
same<Same<S['ObserveManyResponse'], Contract.ObserveManyResponse>>(true);
same<Same<S['DriverCapabilities'], Contract.DriverCapabilities>>(true);
same<Same<S['DriverErrorResponse'], Contract.DriverErrorResponse>>(true);
