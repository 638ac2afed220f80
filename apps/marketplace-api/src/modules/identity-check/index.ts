/** The identity-check module's public entry: what the rest of the app may use of it. */
import { createBuiltinKycVerifier } from '../../integrations/kyc/kyc.js';
import type { ModuleContext, Mounted } from '../context.js';
import { kycRoutes } from './identity-check.routes.js';
import { createKycService } from './identity-check.service.js';

/** A client's identity check (KYC). */
export function identityCheckModule({ db, clock, recorder, outbox }: ModuleContext): Mounted {
  return { routes: kycRoutes({ kyc: createKycService({ db, verifier: createBuiltinKycVerifier({ today: clock.today }), clock, recorder, outbox }) }) };
}
