/** The reviews module's public entry: what the rest of the app may use of it. */
export { reviewsRoutes } from './reviews.routes.js';
export { createReviewsService } from './reviews.service.js';
