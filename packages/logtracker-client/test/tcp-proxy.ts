import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy to the log tracker that a test can cut: `cut()` drops every open connection (requests
 * in flight included) and refuses new ones until `restore()`.
 */
export async function startProxy(target: URL) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    /** Connections the proxy has dropped while in use. */
    cuts: 0,
    async cut() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        this.cuts += sockets.size;
        for (const socket of sockets) socket.destroy();
      });
    },
    restore: () => listen(port),
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    },
  };
}
