/** The reviews module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { reviewsRoutes } from './reviews.routes.js';
import { createReviewsService } from './reviews.service.js';

/**
 * Reviews: a client reviews its completed appointment, administrators moderate, the public reads
 * the approved ones; each moderation move recomputes the prestataire's rating that search sorts by.
 */
export function reviewsModule({ db, recorder, outbox }: ModuleContext): Mounted {
  return { routes: reviewsRoutes({ reviews: createReviewsService({ db, recorder, outbox }) }) };
}
