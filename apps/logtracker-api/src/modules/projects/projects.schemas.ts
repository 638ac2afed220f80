import { envelope, idParams, iso, paginatedEnvelope, paginationQuery, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { PROJECT_ROLES, type Project, type ProjectRole } from '../../db/schema/index.js';

const httpUrl = z
  .url({ protocol: /^https?$/, message: 'Must be an http(s) URL' })
  .max(2048);

export const CreateProjectBody = z.object({
  name: z.string().trim().min(1, 'Name is required').max(255),
  description: z.string().trim().max(5000).nullish(),
  repository_url: httpUrl.nullish(),
});
export type CreateProjectBody = z.infer<typeof CreateProjectBody>;

export const UpdateProjectBody = CreateProjectBody.partial().refine(
  (b) => b.name !== undefined || b.description !== undefined || b.repository_url !== undefined,
  { message: 'Send at least one of name, description, repository_url' },
);
export type UpdateProjectBody = z.infer<typeof UpdateProjectBody>;

export const ProjectParams = idParams;
export const ProjectScopedParams = z.object({ project_id: idParams.shape.id });

export const ListProjectsQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 100 });

export const ProjectResponse = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string().nullable(),
  repository_url: z.string().nullable(),
  role: z.enum(PROJECT_ROLES),
  log_count: z
    .number()
    .int()
    .describe(
      "The logs the project holds, from the daily counts kept as logs are stored and deleted (not a count of the logs themselves). Exact at once for projects keeping logs 60 days or less (retention_days); for longer retention, daily counts are kept 62 days, so it counts the logs of about the last 62 days only, fewer than the project holds. Logs past their retention count until the retention job deletes them.",
    ),
  created_at: timestamp,
  updated_at: timestamp,
});

export const ProjectEnvelope = envelope(ProjectResponse);
export const ProjectListEnvelope = paginatedEnvelope(ProjectResponse);

/** The columns a project's answer shows (a list reads only these). */
export type ProjectSummary = Pick<Project, 'id' | 'name' | 'description' | 'repositoryUrl' | 'createdAt' | 'updatedAt'>;

export function presentProject(project: ProjectSummary, role: ProjectRole, logCount: number) {
  return {
    id: project.id,
    name: project.name,
    description: project.description,
    repository_url: project.repositoryUrl,
    role,
    log_count: logCount,
    created_at: iso(project.createdAt),
    updated_at: iso(project.updatedAt),
  };
}
