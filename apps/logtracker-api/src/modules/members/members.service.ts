import type { Actor } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { ProjectRole } from '../../db/schema/index.js';
import type { ProjectAccess } from '../projects/index.js';
import * as repo from './members.repository.js';

export function createMembersService(deps: { db: DbTx; access: ProjectAccess }) {
  const { db, access } = deps;

  /** Inside the caller's transaction: refuses a change that would leave the project without an owner. */
  async function assertOwnerRemains(tx: DbTx, projectId: number, target: { role: ProjectRole }, newRole?: ProjectRole) {
    if (target.role !== 'owner' || newRole === 'owner') return;
    const owners = await repo.lockOwners(tx, projectId);
    if (owners <= 1) throw new AppError('conflict', 'A project keeps at least one owner; make someone else owner first');
  }

  return {
    async list(actor: Actor, projectId: number) {
      await access.assertMember(actor, projectId);
      return repo.listMembers(db, projectId);
    },

    /** Owners add an existing user by e-mail. */
    async add(actor: Actor, projectId: number, email: string, role: ProjectRole) {
      await access.owner(actor, projectId);
      const userId = await repo.findUserIdByEmail(db, email);
      if (!userId) {
        throw AppError.validation({ email: ['No user has this e-mail; they must register first'] });
      }
      if (!(await repo.insertMember(db, projectId, userId, role))) {
        throw new AppError('conflict', 'This user is already a member of the project');
      }
      const member = await repo.findMember(db, projectId, userId);
      if (!member) throw AppError.notFound('Member');
      return member;
    },

    async changeRole(actor: Actor, projectId: number, userId: number, role: ProjectRole) {
      await access.owner(actor, projectId);
      return withTransaction(db, async (tx) => {
        const target = await repo.findMember(tx, projectId, userId);
        if (!target) throw AppError.notFound('Member');
        await assertOwnerRemains(tx, projectId, target, role);
        await repo.setRole(tx, projectId, userId, role);
        return { ...target, role };
      });
    },

    /** Owners remove anyone; a member may leave on their own. */
    async remove(actor: Actor, projectId: number, userId: number) {
      const role = await access.assertMember(actor, projectId);
      if (role !== 'owner' && userId !== actor.userId) {
        throw new AppError('forbidden', 'Only a project owner may remove other members');
      }
      await withTransaction(db, async (tx) => {
        const target = await repo.findMember(tx, projectId, userId);
        if (!target) throw AppError.notFound('Member');
        await assertOwnerRemains(tx, projectId, target);
        await repo.deleteMember(tx, projectId, userId);
      });
    },
  };
}

export type MembersService = ReturnType<typeof createMembersService>;
