import { alongside, type Actor, type Caller } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import * as repo from './projects.repository.js';
import type { CreateProjectBody, UpdateProjectBody } from './projects.schemas.js';

/**
 * Who may touch a project. A non-member gets 404 (no existence leak); a member who tries an
 * owner's action gets 403.
 */
export function createProjectAccess(deps: { db: DbTx }) {
  async function assertMember(caller: Caller, projectId: number) {
    const role = await repo.findMembership(deps.db, projectId, caller.userId);
    if (!role) throw AppError.notFound('Project');
    return role;
  }
  return {
    async member(actor: Actor, projectId: number) {
      const found = await repo.findForMember(deps.db, projectId, actor.userId);
      if (!found) throw AppError.notFound('Project');
      return found;
    },
    /** Cheaper than `member` when the project row itself is not needed. */
    assertMember,
    /**
     * The reads of a project's page, run while membership is checked (a round trip fewer): their
     * answer once the caller is found a member, 404 otherwise, whatever they found. `read` must
     * only read.
     */
    whileMember<T>(caller: Caller, projectId: number, read: () => Promise<T>): Promise<T> {
      return alongside(assertMember(caller, projectId), read);
    },
    async owner(actor: Actor, projectId: number) {
      const found = await repo.findForMember(deps.db, projectId, actor.userId);
      if (!found) throw AppError.notFound('Project');
      if (found.role !== 'owner') throw new AppError('forbidden', 'Only a project owner may do this');
      return found;
    },
  };
}

export type ProjectAccess = ReturnType<typeof createProjectAccess>;

export function createProjectsService(deps: { db: DbTx; access: ProjectAccess }) {
  const { db, access } = deps;
  const logCount = async (projectId: number) => (await repo.logCounts(db, [projectId])).get(projectId) ?? 0;
  return {
    async list(actor: Actor, page: number, perPage: number) {
      const { rows, total } = await repo.listForMember(db, actor.userId, perPage, pageOffset(page, perPage));
      const counts = await repo.logCounts(db, rows.map((r) => r.project.id));
      return {
        rows: rows.map((r) => ({ ...r, logCount: counts.get(r.project.id) ?? 0 })),
        meta: pageMeta(page, perPage, total),
      };
    },

    create(actor: Actor, body: CreateProjectBody) {
      return withTransaction(db, async (tx) => {
        const project = await repo.insertProject(tx, {
          name: body.name,
          description: body.description ?? null,
          repositoryUrl: body.repository_url ?? null,
          createdBy: actor.userId,
        });
        await repo.insertMember(tx, { projectId: project.id, userId: actor.userId, role: 'owner' });
        return { project, role: 'owner' as const, logCount: 0 };
      });
    },

    async get(actor: Actor, projectId: number) {
      const found = await access.member(actor, projectId);
      return { ...found, logCount: await logCount(projectId) };
    },

    async update(actor: Actor, projectId: number, body: UpdateProjectBody) {
      const { role } = await access.owner(actor, projectId);
      const project = await repo.updateProject(db, projectId, {
        name: body.name,
        description: body.description,
        repositoryUrl: body.repository_url,
      });
      if (!project) throw AppError.notFound('Project');
      return { project, role, logCount: await logCount(projectId) };
    },

    async remove(actor: Actor, projectId: number) {
      await access.owner(actor, projectId);
      await repo.deleteProject(db, projectId);
    },
  };
}

export type ProjectsService = ReturnType<typeof createProjectsService>;
