import { z } from 'zod';
import { linkTokenField } from './email-verification.schemas.js';

/** The token of the undo link e-mailed to the former address. */
export const RevertEmailChangeBody = z.object({ token: linkTokenField });
export type RevertEmailChangeBody = z.infer<typeof RevertEmailChangeBody>;
