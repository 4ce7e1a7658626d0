import { CallHandler, createParamDecorator, ExecutionContext, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { finalize, Observable } from 'rxjs';
import { Executor, ExecutorAdmission, executorKey } from '../executor/executor';
import type { OrganisationContext } from '../identity/organisation-context';
import type { PolicyTasks } from './policy-tasks';

const ADMISSION = Symbol('policyAdmission');
type AdmittedRequest = { organisationContext?: OrganisationContext; [ADMISSION]?: ExecutorAdmission };

/**
 * Admits a dry-run or violations scan under its organisation (the executor's bound on callers in progress) right
 * after the access guard, before the body is validated and before anything is read, and releases it when the handler
 * has answered. A refusal (429) then costs little more than the authentication: under a flood, the body's validation
 * was about a third of each refusal's time on the event loop.
 */
@Injectable()
export class PolicyAdmissionInterceptor implements NestInterceptor {
  constructor(private readonly executor: Executor<PolicyTasks>) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<AdmittedRequest>();
    const org = request.organisationContext;
    if (!org) throw new Error('PolicyAdmissionInterceptor on a handler without @RequireOrgRole');
    const admission = this.executor.admit(executorKey(org.organisation.id));
    request[ADMISSION] = admission;
    return next.handle().pipe(finalize(() => admission.release()));
  }
}

/** The route is admitted under its organisation before its body is validated (PolicyAdmissionInterceptor). */
export const AdmitUnderOrganisation = () => UseInterceptors(PolicyAdmissionInterceptor);

/** The admission of a route declared with @AdmitUnderOrganisation(). */
export const Admission = createParamDecorator((_: unknown, ctx: ExecutionContext): ExecutorAdmission => {
  const admission = ctx.switchToHttp().getRequest<AdmittedRequest>()[ADMISSION];
  if (!admission) throw new Error('@Admission() used on a handler without @AdmitUnderOrganisation()');
  return admission;
});
