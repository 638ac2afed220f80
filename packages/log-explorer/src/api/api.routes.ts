import { request, withQuery, type Query } from './api.client';
import type { Insights, ListMeta, Log, Project, Stats, User } from './api.types';

/** The routes the explorer calls, one function each. */

export const login = (email: string, password: string) =>
  request<{ data: { user: User; token: string } }>('/api/auth/login', {
    method: 'POST',
    body: { email, password },
    anonymous: true,
  }).then((r) => r.data);

export const logout = () => request<unknown>('/api/auth/logout', { method: 'POST' });

export const currentUser = (signal?: AbortSignal) => request<{ data: User }>('/api/user', { signal }).then((r) => r.data);

export const listProjects = (signal?: AbortSignal) =>
  request<{ data: Project[] }>(withQuery('/api/projects', { per_page: 100 }), { signal }).then((r) => r.data);

export const listLogs = (projectId: number, query: Query, signal?: AbortSignal) =>
  request<{ data: Log[]; meta?: ListMeta }>(withQuery(`/api/projects/${projectId}/logs`, query), { signal });

export const getLog = (id: number, signal?: AbortSignal) => request<{ data: Log }>(`/api/logs/${id}`, { signal }).then((r) => r.data);

export const getStats = (projectId: number, query: Query, signal?: AbortSignal) =>
  request<{ data: Stats }>(withQuery(`/api/projects/${projectId}/stats`, query), { signal }).then((r) => r.data);

export const getInsights = (projectId: number, signal?: AbortSignal) =>
  request<{ data: Insights }>(`/api/projects/${projectId}/insights`, { signal }).then((r) => r.data);

export const createTailTicket = (projectId: number) =>
  request<{ data: { ticket: string; expires_at: string } }>(`/api/projects/${projectId}/logs/tail/tickets`, {
    method: 'POST',
  }).then((r) => r.data);
