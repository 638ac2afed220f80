import { createServer, Socket, type Server } from 'node:net';

/**
 * A TCP relay in front of a real PostgreSQL server, for tests of an outage: the app connects
 * through it, speaking the real protocol to the real server, and the test "stops" the database
 * (every open connection is reset, new ones are refused, as when the server is killed) and
 * "starts" it again on the same port. Nothing of the app is replaced.
 */
export interface OutageProxy {
  /** `serverUrl` with its host and port replaced by the proxy's (database, user and options kept). */
  url(serverUrl: string): string;
  port: number;
  /** Resets every relayed connection, both ways, and refuses new ones until `start`. */
  stop(): Promise<void>;
  /** Accepts connections again, on the same port. */
  start(): Promise<void>;
  /** How many connections it has relayed and reset so far. */
  stats(): { accepted: number; reset: number };
  close(): Promise<void>;
}

/** Starts a proxy to the server of `serverUrl` on a free loopback port. */
export async function startOutageProxy(serverUrl: string): Promise<OutageProxy> {
  const target = new URL(serverUrl);
  const targetHost = target.hostname || '127.0.0.1';
  const targetPort = Number(target.port || 5432);
  const pairs = new Set<[Socket, Socket]>();
  let accepted = 0;
  let reset = 0;
  let port = 0;
  let server: Server | undefined;

  const relay = (client: Socket) => {
    accepted += 1;
    const upstream = new Socket();
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    // Either side failing or closing takes the other down with it, as a broken link would.
    const drop = () => {
      pairs.delete(pair);
      if (!client.destroyed) client.destroy();
      if (!upstream.destroyed) upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.connect(targetPort, targetHost, () => {
      client.pipe(upstream);
      upstream.pipe(client);
    });
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const next = createServer({ noDelay: true }, relay);
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => {
        next.off('error', reject);
        server = next;
        port = (next.address() as { port: number }).port;
        resolve();
      });
    });

  const stopListening = () =>
    new Promise<void>((resolve) => {
      const current = server;
      server = undefined;
      if (!current) return resolve();
      current.close(() => resolve());
    });

  await listen();
  return {
    get port() {
      return port;
    },
    url(serverUrl) {
      const url = new URL(serverUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    async stop() {
      const closing = stopListening();
      for (const pair of [...pairs]) {
        pairs.delete(pair);
        reset += 1;
        // A reset (RST), not a polite close: the peers see ECONNRESET, as when a server dies.
        for (const socket of pair) if (!socket.destroyed) socket.resetAndDestroy();
      }
      await closing;
    },
    start: () => (server ? Promise.resolve() : listen()),
    stats: () => ({ accepted, reset }),
    async close() {
      const closing = stopListening();
      for (const pair of [...pairs]) for (const socket of pair) socket.destroy();
      pairs.clear();
      await closing;
    },
  };
}
