import { and, asc, eq } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { projectMembers, users, type ProjectRole } from '../../db/schema/index.js';

const memberColumns = {
  userId: projectMembers.userId,
  role: projectMembers.role,
  createdAt: projectMembers.createdAt,
  name: users.name,
  email: users.email,
};

export function listMembers(db: DbTx, projectId: number) {
  return db
    .select(memberColumns)
    .from(projectMembers)
    .innerJoin(users, eq(users.id, projectMembers.userId))
    .where(eq(projectMembers.projectId, projectId))
    .orderBy(asc(projectMembers.createdAt), asc(projectMembers.userId));
}

export async function findMember(db: DbTx, projectId: number, userId: number) {
  const [row] = await db
    .select(memberColumns)
    .from(projectMembers)
    .innerJoin(users, eq(users.id, projectMembers.userId))
    .where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, userId)))
    .limit(1);
  return row;
}

/** Answers false when the user already belongs to the project. */
export async function insertMember(db: DbTx, projectId: number, userId: number, role: ProjectRole) {
  const inserted = await db
    .insert(projectMembers)
    .values({ projectId, userId, role })
    .onConflictDoNothing()
    .returning({ userId: projectMembers.userId });
  return inserted.length > 0;
}

export async function setRole(db: DbTx, projectId: number, userId: number, role: ProjectRole) {
  await db
    .update(projectMembers)
    .set({ role })
    .where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, userId)));
}

export async function deleteMember(db: DbTx, projectId: number, userId: number) {
  await db.delete(projectMembers).where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, userId)));
}

/** Counts owners with the rows locked, so two concurrent demotions cannot leave a project ownerless. */
export async function lockOwners(db: DbTx, projectId: number) {
  const rows = await db
    .select({ userId: projectMembers.userId })
    .from(projectMembers)
    .where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.role, 'owner')))
    .for('update');
  return rows.length;
}

export async function findUserIdByEmail(db: DbTx, email: string) {
  const [row] = await db.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1);
  return row?.id;
}

