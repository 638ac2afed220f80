import type { DbOrTx, Fanout } from '@repo/db';
import {
  errorFrame,
  frame,
  isChannelName,
  isPresenceChannel,
  isPrivateChannel,
  newSocketId,
  PROTOCOL_VERSION,
  PUSHER_ERROR,
  verifyAuth,
} from './pusher.protocol.js';

/** The part of a `ws` WebSocket the hub uses. */
export interface HubSocket {
  readonly readyState: number;
  readonly OPEN: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  on(event: 'message', listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
}

interface HubLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** What crosses instances for one channel: an event for its subscribers, but the one that caused it. */
interface ChannelMessage {
  event: string;
  /** A JSON string, as Pusher frames carry it. */
  data: string;
  except?: string;
}

interface Member {
  user_id: string;
  user_info?: unknown;
}

interface Connection {
  socketId: string;
  socket: HubSocket;
  channels: Map<string, { member?: Member }>;
  lastSeen: number;
  pinged: boolean;
  /** Client events in the current one-second window. */
  window: { start: number; count: number };
}

export interface HubOptions {
  key: string;
  secret: string;
  activityTimeoutSeconds: number;
  /** Client events a connection may trigger per second (Pusher's own limit is 10). */
  clientEventsPerSecond?: number;
  /** Largest client event `data`, in bytes (Pusher: 10 KB). */
  maxClientEventBytes?: number;
}

/**
 * The websocket side of real-time: Pusher-protocol connections, their channel subscriptions, and
 * delivery of channel events to this instance's subscribers. Events reach every instance through
 * the fan-out (LISTEN/NOTIFY), so a subscriber gets what any instance publishes.
 */
export function createRealtimeHub(deps: { fanout: Fanout; options: HubOptions; log: HubLogger }) {
  const { fanout, options, log } = deps;
  const perSecond = options.clientEventsPerSecond ?? 10;
  const maxEventBytes = options.maxClientEventBytes ?? 10 * 1024;
  const channels = new Map<string, { connections: Set<Connection>; stop: () => void }>();
  const connections = new Set<Connection>();

  function send(conn: Connection, text: string) {
    if (conn.socket.readyState === conn.socket.OPEN) conn.socket.send(text);
  }

  function deliver(channel: string, message: ChannelMessage) {
    const entry = channels.get(channel);
    if (!entry) return;
    const text = frame(message.event, message.data, channel);
    for (const conn of entry.connections) if (conn.socketId !== message.except) send(conn, text);
  }

  function join(conn: Connection, channel: string, member?: Member) {
    let entry = channels.get(channel);
    if (!entry) {
      const stop = fanout.subscribe(channel, (message) => deliver(channel, message as ChannelMessage));
      entry = { connections: new Set(), stop };
      channels.set(channel, entry);
    }
    entry.connections.add(conn);
    conn.channels.set(channel, { member });
  }

  function leave(conn: Connection, channel: string) {
    const state = conn.channels.get(channel);
    if (!state) return;
    conn.channels.delete(channel);
    const entry = channels.get(channel);
    entry?.connections.delete(conn);
    if (entry && entry.connections.size === 0) {
      entry.stop();
      channels.delete(channel);
    }
    if (state.member) broadcast(channel, 'pusher_internal:member_removed', { user_id: state.member.user_id }, conn.socketId);
  }

  function broadcast(channel: string, event: string, data: unknown, except?: string, tx?: DbOrTx) {
    const message: ChannelMessage = { event, data: typeof data === 'string' ? data : JSON.stringify(data), except };
    return fanout.publish(channel, message, { tx }).catch((error: unknown) => {
      log.warn({ err: error, channel, event }, 'real-time: publishing failed');
      if (tx) throw error;
    });
  }

  /** Members of a presence channel connected to this instance (presence is kept per instance). */
  function presenceOf(channel: string) {
    const hash: Record<string, unknown> = {};
    for (const conn of channels.get(channel)?.connections ?? []) {
      const member = conn.channels.get(channel)?.member;
      if (member) hash[member.user_id] = member.user_info ?? null;
    }
    const ids = Object.keys(hash);
    return { presence: { ids, hash, count: ids.length } };
  }

  function subscribe(conn: Connection, data: Record<string, unknown>) {
    const channel = data.channel;
    if (!isChannelName(channel)) return send(conn, errorFrame(null, 'Invalid channel name'));
    if (conn.channels.has(channel)) return send(conn, frame('pusher_internal:subscription_succeeded', {}, channel));
    let member: Member | undefined;
    if (isPrivateChannel(channel)) {
      const channelData = isPresenceChannel(channel) ? data.channel_data : undefined;
      if (isPresenceChannel(channel) && typeof channelData !== 'string') return refuse(conn, channel, 'Presence channels need channel_data');
      if (!verifyAuth(options.key, options.secret, data.auth, conn.socketId, channel, channelData as string | undefined)) {
        return refuse(conn, channel, `Invalid signature for ${channel}`);
      }
      if (typeof channelData === 'string') {
        const parsed = parseJson(channelData) as { user_id?: unknown; user_info?: unknown } | undefined;
        if (!parsed || (typeof parsed.user_id !== 'string' && typeof parsed.user_id !== 'number')) {
          return refuse(conn, channel, 'channel_data must name a user_id');
        }
        member = { user_id: String(parsed.user_id), user_info: parsed.user_info };
      }
    }
    join(conn, channel, member);
    if (member) {
      send(conn, frame('pusher_internal:subscription_succeeded', presenceOf(channel), channel));
      void broadcast(channel, 'pusher_internal:member_added', member, conn.socketId);
    } else {
      send(conn, frame('pusher_internal:subscription_succeeded', {}, channel));
    }
  }

  /** Pusher answers a bad signature with `pusher:error` 4009; the channel hears `pusher:subscription_error` too. */
  function refuse(conn: Connection, channel: string, message: string) {
    send(conn, errorFrame(PUSHER_ERROR.unauthorized, message));
    send(conn, frame('pusher:subscription_error', { type: 'AuthError', error: message, status: 401 }, channel));
  }

  function clientEvent(conn: Connection, event: string, message: Record<string, unknown>) {
    const channel = message.channel;
    if (typeof channel !== 'string' || !isPrivateChannel(channel)) {
      return send(conn, errorFrame(null, 'Client event rejected - only supported on private and presence channels'));
    }
    if (!conn.channels.has(channel)) return send(conn, errorFrame(null, `Client event rejected - not subscribed to ${channel}`));
    const now = Date.now();
    if (now - conn.window.start >= 1000) conn.window = { start: now, count: 0 };
    if (++conn.window.count > perSecond) return send(conn, errorFrame(PUSHER_ERROR.clientEventRateLimited, 'Client event rejected due to rate limit'));
    const data = typeof message.data === 'string' ? message.data : JSON.stringify(message.data ?? {});
    if (Buffer.byteLength(data) > maxEventBytes) return send(conn, errorFrame(null, 'Client event rejected - data too large'));
    void broadcast(channel, event, data, conn.socketId);
  }

  function received(conn: Connection, raw: string) {
    conn.lastSeen = Date.now();
    conn.pinged = false;
    const message = parseJson(raw);
    if (!message || typeof message !== 'object' || typeof (message as { event?: unknown }).event !== 'string') {
      return send(conn, errorFrame(null, 'Invalid message: expected JSON with an event'));
    }
    const { event } = message as { event: string };
    const rawData = (message as { data?: unknown }).data;
    const data = (typeof rawData === 'string' ? parseJson(rawData) : rawData) as Record<string, unknown> | undefined;
    switch (event) {
      case 'pusher:ping':
        return send(conn, frame('pusher:pong', {}));
      case 'pusher:pong':
        return;
      case 'pusher:subscribe':
        return subscribe(conn, data && typeof data === 'object' ? data : {});
      case 'pusher:unsubscribe':
        if (data && typeof data.channel === 'string') leave(conn, data.channel);
        return;
      default:
        if (event.startsWith('client-')) return clientEvent(conn, event, message as Record<string, unknown>);
        return send(conn, errorFrame(null, `Unsupported event: ${event.slice(0, 64)}`));
    }
  }

  // A client pings after `activity_timeout` of silence; one silent past that is pinged, then dropped.
  const sweepMs = Math.min(options.activityTimeoutSeconds * 1000, 30_000);
  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const conn of connections) {
      const idle = now - conn.lastSeen;
      if (conn.pinged && idle > options.activityTimeoutSeconds * 1000 + sweepMs) {
        conn.socket.close(PUSHER_ERROR.pongNotReceived, 'Pong reply not received');
      } else if (!conn.pinged && idle > options.activityTimeoutSeconds * 1000) {
        conn.pinged = true;
        send(conn, frame('pusher:ping', {}));
      }
    }
  }, sweepMs);
  sweeper.unref();

  return {
    /**
     * Serves a socket opened on `/app/{key}`: refuses an unknown key or protocol with Pusher's code,
     * otherwise sends `pusher:connection_established` and serves the connection until it closes.
     */
    open(socket: HubSocket, key: string, protocol: string | undefined) {
      const refuseConnection = (code: number, message: string) => {
        socket.send(errorFrame(code, message));
        socket.close(code, message);
      };
      if (key !== options.key) return refuseConnection(PUSHER_ERROR.appNotFound, `App key ${key.slice(0, 64)} not in this cluster`);
      if (protocol === undefined) return refuseConnection(PUSHER_ERROR.noProtocol, 'No protocol version supplied');
      if (!/^\d+$/.test(protocol)) return refuseConnection(PUSHER_ERROR.invalidVersion, 'Invalid version string format');
      if (Number(protocol) !== PROTOCOL_VERSION) return refuseConnection(PUSHER_ERROR.unsupportedProtocol, `Unsupported protocol version ${protocol}`);

      const conn: Connection = {
        socketId: newSocketId(),
        socket,
        channels: new Map(),
        lastSeen: Date.now(),
        pinged: false,
        window: { start: 0, count: 0 },
      };
      connections.add(conn);
      socket.on('message', (data, isBinary) => {
        if (isBinary) return send(conn, errorFrame(null, 'Binary frames are not supported'));
        received(conn, Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'));
      });
      socket.on('close', () => {
        connections.delete(conn);
        for (const channel of [...conn.channels.keys()]) leave(conn, channel);
      });
      send(conn, frame('pusher:connection_established', { socket_id: conn.socketId, activity_timeout: options.activityTimeoutSeconds }));
      log.info({ socketId: conn.socketId }, 'real-time connection opened');
    },

    /**
     * Sends an event to a channel's subscribers on every instance, but the socket `except` (the
     * `X-Socket-ID` of the request that caused it); inside `tx`, only if it commits.
     */
    publish(channel: string, event: string, payload: unknown, opts: { except?: string; tx?: DbOrTx } = {}) {
      return broadcast(channel, event, payload, opts.except, opts.tx);
    },

    /** Connections open on this instance (health and tests). */
    connectionCount: () => connections.size,

    close() {
      clearInterval(sweeper);
      for (const conn of connections) conn.socket.close(1001, 'Server shutting down');
    },
  };
}

export type RealtimeHub = ReturnType<typeof createRealtimeHub>;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
