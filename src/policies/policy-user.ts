import type { Principal } from '../identity/principal';
import type { PolicyUserVariable } from './policy-variables';

/** `request.user` for a caller. */
export const principalPolicyUser = (p: Principal): PolicyUserVariable => ({
  identity: p.user.identity,
  username: p.user.username,
  platformAdmin: !!p.user.platformAdmin,
});
