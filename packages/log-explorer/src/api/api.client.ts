import { getToken } from '../auth/token.store';

/** An answer in the API's error envelope, or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Unauthorized = () => void;
let onUnauthorized: Unauthorized = () => {};

/** Called on any 401 of an authenticated request: the session is over, back to sign-in. */
export function setUnauthorizedHandler(handler: Unauthorized): void {
  onUnauthorized = handler;
}

export function reportUnauthorized(): void {
  onUnauthorized();
}

export type Query = Record<string, string | number | null | undefined>;

export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

type Envelope = {
  error?: string | { code?: string; message?: string; details?: unknown };
  message?: string;
  errors?: Record<string, string[]>;
};

/**
 * The error envelope, as `{ error: code, message, errors? }` or `{ error: { code, message } }`;
 * a validation error names its first field, which says more than "The given data was invalid".
 */
function readEnvelope(body: unknown): { code?: string; message?: string } {
  const e = (body ?? {}) as Envelope;
  if (e.error && typeof e.error === 'object') return { code: e.error.code, message: e.error.message };
  const [field, problems] = Object.entries(e.errors ?? {})[0] ?? [];
  const detail = field && problems?.[0] ? `: ${field}: ${problems[0]}` : '';
  return { code: e.error, message: e.message ? `${e.message}${detail}` : undefined };
}

interface RequestOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
  /** The sign-in form shows its own 401 (wrong credentials) instead of leaving the page. */
  anonymous?: boolean;
}

/** A request to the log tracker's API; resolves with the whole JSON body (`{ data, meta? }`). */
export async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const token = getToken();
  if (token && !options.anonymous) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network', 'The log tracker cannot be reached');
  }
  const body = (await response.json().catch(() => null)) as unknown;
  if (!response.ok) {
    if (response.status === 401 && !options.anonymous) onUnauthorized();
    const { code, message } = readEnvelope(body);
    throw new ApiError(response.status, code ?? 'http_error', message ?? `HTTP ${response.status}`);
  }
  return body as T;
}

export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError';
}
