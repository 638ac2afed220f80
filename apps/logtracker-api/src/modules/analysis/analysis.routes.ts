import { requireActor } from '@repo/auth';
import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { z } from 'zod';
import { ProjectScopedParams } from '../projects/index.js';
import type { AnalysisService } from './analysis.service.js';
import { AnalysisEnvelope, AnalyzeBody, InsightsEnvelope, presentAnalysis, presentPattern } from './analysis.schemas.js';

const security = [{ bearerAuth: [] }];

export function analysisRoutes(deps: { analysis: AnalysisService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.authenticate);

    app.post(
      '/projects/:project_id/analyze',
      {
        schema: {
          operationId: 'analyzeProject',
          tags: ['analysis'],
          summary: 'Mine log patterns in a range and report top and new patterns, rate anomalies, error-rate change and a summary',
          description:
            'Deterministic by default. Every log of the range is tagged with its pattern (see `pattern_id` in the log list). Where an AI model is configured, a narrative is added on top.',
          security,
          params: ProjectScopedParams,
          body: AnalyzeBody,
          response: { 201: AnalysisEnvelope, ...errorResponses(400, 401, 404, 422, 429) },
        },
      },
      async (request, reply) => {
        const analysis = await deps.analysis.analyze(requireActor(request), request.params.project_id, request.body);
        return reply.status(201).send({ data: presentAnalysis(analysis), message: 'Analysis complete' });
      },
    );

    app.get(
      '/projects/:project_id/insights',
      {
        schema: {
          operationId: 'projectInsights',
          tags: ['analysis'],
          summary: 'The latest analysis and the current patterns, most frequent first',
          security,
          params: ProjectScopedParams,
          querystring: z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) }),
          response: { 200: InsightsEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const { latest, patterns } = await deps.analysis.insights(
          requireActor(request),
          request.params.project_id,
          request.query.limit,
        );
        return { data: { latest_analysis: latest ? presentAnalysis(latest) : null, patterns: patterns.map(presentPattern) } };
      },
    );
  };
}
