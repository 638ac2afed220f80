import { arrayLiteral, pageWithTotal, preparedOnce, totalOfList, withTransaction } from '@repo/db';
import { and, count, desc, eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logLevelCounts, logPatterns, logs, projectMembers, projects, type ProjectRole } from '../../db/schema/index.js';

// The reads every project-scoped request makes, prepared once (see preparedOnce).
const forMember = preparedOnce((db) =>
  db
    .select({ project: projects, role: projectMembers.role })
    .from(projects)
    .innerJoin(
      projectMembers,
      and(eq(projectMembers.projectId, projects.id), eq(projectMembers.userId, sql.placeholder('userId'))),
    )
    .where(eq(projects.id, sql.placeholder('projectId')))
    .limit(1)
    .prepare('project_for_member'),
);
const membership = preparedOnce((db) =>
  db
    .select({ role: projectMembers.role })
    .from(projectMembers)
    .where(and(eq(projectMembers.projectId, sql.placeholder('projectId')), eq(projectMembers.userId, sql.placeholder('userId'))))
    .limit(1)
    .prepare('project_membership'),
);
/** What a project list presents (presentProject): not the settings, nor the webhook secret. */
const summaryColumns = {
  id: projects.id,
  name: projects.name,
  description: projects.description,
  repositoryUrl: projects.repositoryUrl,
  createdAt: projects.createdAt,
  updatedAt: projects.updatedAt,
};
// The page and its total in one statement (a member's projects are tens at most: see totalOfList).
const memberProjects = preparedOnce((db) =>
  db
    .select({ project: summaryColumns, role: projectMembers.role, total: totalOfList() })
    .from(projects)
    .innerJoin(projectMembers, eq(projectMembers.projectId, projects.id))
    .where(eq(projectMembers.userId, sql.placeholder('userId')))
    .orderBy(desc(projects.createdAt), desc(projects.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare('member_projects_page'),
);
const memberProjectCount = preparedOnce((db) =>
  db.select({ n: count() }).from(projectMembers).where(eq(projectMembers.userId, sql.placeholder('userId'))).prepare('member_project_count'),
);

/** The project and the caller's role in it, or undefined when the caller is not a member. */
export async function findForMember(db: DbTx, projectId: number, userId: number) {
  const [row] = await forMember(db).execute({ projectId, userId });
  return row;
}

/**
 * The project row, locked until the end of the transaction: a read-modify-write (the merge of
 * notification settings) must not interleave with another, or one of the two updates is lost.
 */
export async function findForUpdate(tx: DbTx, projectId: number) {
  const [project] = await tx.select().from(projects).where(eq(projects.id, projectId)).limit(1).for('update');
  return project;
}

export async function findMembership(db: DbTx, projectId: number, userId: number) {
  const [row] = await membership(db).execute({ projectId, userId });
  return row?.role;
}

export async function listForMember(db: DbTx, userId: number, limit: number, offset: number) {
  return pageWithTotal(
    await memberProjects(db).execute({ userId, limit, offset }),
    offset,
    async () => {
      const [counted] = await memberProjectCount(db).execute({ userId });
      return counted?.n ?? 0;
    },
    ({ project, role }) => ({ project, role }),
  );
}

/**
 * The logs each project holds, summed from the daily rollups the log triggers keep as logs are
 * stored and deleted (retention's truncated days take their buckets with them): a few hundred
 * index entries per project, where counting the logs would read millions. Day buckets are kept
 * 62 days (ROLLUP_KEEP_DAYS), so the logs of older days are not in the sum. A project without
 * any is not in the map.
 *
 * Prepared once with the ids as one array and the grain written out: the main pool plans it once
 * for every list (genericPlans), and with the grain a value too, that plan took a third of the
 * rollups' rows for the caller's projects and read them all, the minutes and hours included (a
 * sequential scan of 4 491 pages, 6–12 ms a list, where the day buckets' index entries took 0.1).
 */
const projectLogCounts = preparedOnce((db) =>
  db
    .select({ projectId: logLevelCounts.projectId, n: sql<string>`sum(${logLevelCounts.count})` })
    .from(logLevelCounts)
    .where(and(sql`${logLevelCounts.projectId} = any(${sql.placeholder('projectIds')}::int[])`, sql`${logLevelCounts.grain} = 'day'`))
    .groupBy(logLevelCounts.projectId)
    .prepare('project_log_counts'),
);

export async function logCounts(db: DbTx, projectIds: number[]): Promise<Map<number, number>> {
  if (projectIds.length === 0) return new Map();
  const rows = await projectLogCounts(db).execute({ projectIds: arrayLiteral(projectIds) });
  return new Map(rows.map((row) => [row.projectId, Math.max(0, Number(row.n))]));
}

export async function insertProject(
  db: DbTx,
  values: { name: string; description?: string | null; repositoryUrl?: string | null; createdBy: number },
) {
  const [project] = await db.insert(projects).values(values).returning();
  if (!project) throw new Error('insert returned no project');
  return project;
}

export async function insertMember(db: DbTx, values: { projectId: number; userId: number; role: ProjectRole }) {
  await db.insert(projectMembers).values(values);
}

export async function updateProject(
  db: DbTx,
  projectId: number,
  values: Partial<{
    name: string;
    description: string | null;
    repositoryUrl: string | null;
    retentionDays: number;
    alertLevels: (typeof projects.$inferInsert)['alertLevels'];
    notificationSettings: (typeof projects.$inferInsert)['notificationSettings'];
  }>,
) {
  const [project] = await db
    .update(projects)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(projects.id, projectId))
    .returning();
  return project;
}

/**
 * The project, then its logs and their pattern tags (which have no foreign key to cascade from, see insertLogs). In this
 * order: deleting the project waits for the inserts holding its row, and the logs' delete, a
 * statement later, sees what they committed.
 */
export async function deleteProject(db: DbTx, projectId: number) {
  await withTransaction(db, async (tx) => {
    await tx.delete(projects).where(eq(projects.id, projectId));
    await tx.delete(logs).where(eq(logs.projectId, projectId));
    await tx.delete(logPatterns).where(eq(logPatterns.projectId, projectId));
  });
}
