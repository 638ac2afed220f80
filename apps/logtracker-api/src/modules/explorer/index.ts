/** The explorer module's public entry: the log explorer page, served by the log tracker. */
export { EXPLORER_CSP, explorerRoot, explorerRoutes } from './explorer.routes.js';
