import type { FastifyInstance } from 'fastify';

/**
 * Starts a built app: listens, then on SIGTERM/SIGINT stops accepting connections, lets in-flight
 * requests finish (bounded by a timeout) and closes the app's resources.
 */
export async function runServer(options: {
  name: string;
  /** Loads the configuration and builds the app, saying where it listens. */
  build: () => Promise<{ app: FastifyInstance; host: string; port: number }>;
  shutdownTimeoutMs?: number;
}) {
  let app: FastifyInstance;
  let host: string;
  let port: number;
  try {
    ({ app, host, port } = await options.build());
  } catch (error) {
    // A configuration error carries a readable message; anything else its stack.
    const e = error as Error;
    process.stderr.write(`${options.name} failed to start: ${e.name === 'ConfigError' ? e.message : (e.stack ?? String(e))}\n`);
    process.exit(1);
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.log.error('graceful shutdown timed out');
      process.exit(1);
    }, options.shutdownTimeoutMs ?? 10_000);
    timer.unref();
    try {
      await app.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error while shutting down');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  try {
    await app.listen({ host, port });
  } catch (error) {
    app.log.error({ err: error }, 'could not listen');
    await app.close();
    process.exit(1);
  }
  app.log.info(`${options.name} ready on http://${host}:${port}`);
}
