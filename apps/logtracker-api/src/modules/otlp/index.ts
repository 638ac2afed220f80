/** The otlp module's public entry: what the rest of the app may use of it. */
export { otlpRoutes } from './otlp.routes.js';
