import { createOpenAiCompatibleModel, type OpenAiCompatibleOptions } from '@repo/ai';
import type { NarrativeWriter } from './ai.js';

const SYSTEM_PROMPT = [
  'You are a site reliability engineer reviewing the log analysis of one project.',
  'You receive computed facts as JSON: totals by level, error rate and its change, top patterns with counts,',
  'new patterns, rate anomalies with their figures, top sources, and a few sample messages.',
  'Write a short narrative (at most 150 words) for the on-call engineer: what stands out, what is likely related,',
  'and what to look at first. Use only the facts given; do not invent numbers, services or causes.',
].join(' ');

/** The narrative from a chat model (@repo/ai); any failure (timeout, HTTP error, odd answer) yields no narrative. */
export function createOpenAiCompatibleWriter(options: OpenAiCompatibleOptions & { onError?: (error: unknown) => void }): NarrativeWriter {
  const chat = createOpenAiCompatibleModel(options);
  return {
    model: options.model,
    async write(facts) {
      try {
        const answer = await chat.complete(
          [
            { role: 'system', content: SYSTEM_PROMPT },
            { role: 'user', content: JSON.stringify(facts) },
          ],
          { json: false, maxTokens: 400 },
        );
        return answer.text.slice(0, 4000);
      } catch (error) {
        options.onError?.(error);
        return null;
      }
    },
  };
}
