/** Where a log was made, as the CI service running the job describes it. */
export interface CiContext {
  provider: 'github' | 'gitlab' | 'jenkins';
  repository?: string;
  ref?: string;
  sha?: string;
  job?: string;
  run_url?: string;
}

type Env = Record<string, string | undefined>;

/**
 * The pipeline's context from the variables GitHub Actions, GitLab CI or Jenkins set for every job,
 * or undefined outside them. Each log shipped from the job carries it under `ci`.
 */
export function ciContext(env: Env): CiContext | undefined {
  if (env.GITHUB_ACTIONS === 'true' || env.GITHUB_REPOSITORY) {
    const run = env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY && env.GITHUB_RUN_ID
      ? `${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}`
      : undefined;
    return defined({ provider: 'github', repository: env.GITHUB_REPOSITORY, ref: env.GITHUB_REF_NAME, sha: env.GITHUB_SHA, job: env.GITHUB_JOB, run_url: run });
  }
  if (env.GITLAB_CI === 'true' || env.CI_PROJECT_PATH) {
    return defined({ provider: 'gitlab', repository: env.CI_PROJECT_PATH, ref: env.CI_COMMIT_REF_NAME, sha: env.CI_COMMIT_SHA, job: env.CI_JOB_NAME, run_url: env.CI_JOB_URL });
  }
  if (env.JENKINS_URL || (env.JOB_NAME && env.BUILD_URL)) {
    return defined({ provider: 'jenkins', ref: env.GIT_BRANCH, sha: env.GIT_COMMIT, job: env.JOB_NAME, run_url: env.BUILD_URL });
  }
  return undefined;
}

function defined(context: CiContext): CiContext {
  const out = { ...context };
  for (const key of Object.keys(out) as (keyof CiContext)[]) if (out[key] === undefined || out[key] === '') delete out[key];
  return out;
}
