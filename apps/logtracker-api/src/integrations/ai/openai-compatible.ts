import type { NarrativeWriter } from './ai.js';

export interface OpenAiCompatibleOptions {
  /** Base URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1 */
  url: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  onError?: (error: unknown) => void;
}

const SYSTEM_PROMPT = [
  'You are a site reliability engineer reviewing the log analysis of one project.',
  'You receive computed facts as JSON: totals by level, error rate and its change, top patterns with counts,',
  'new patterns, rate anomalies with their figures, top sources, and a few sample messages.',
  'Write a short narrative (at most 150 words) for the on-call engineer: what stands out, what is likely related,',
  'and what to look at first. Use only the facts given; do not invent numbers, services or causes.',
].join(' ');

/** A chat-completions client; any failure (timeout, HTTP error, odd answer) yields no narrative. */
export function createOpenAiCompatibleWriter(options: OpenAiCompatibleOptions): NarrativeWriter {
  const endpoint = `${options.url.replace(/\/+$/, '')}/chat/completions`;
  return {
    model: options.model,
    async write(facts) {
      try {
        const response = await fetch(endpoint, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
          },
          body: JSON.stringify({
            model: options.model,
            temperature: 0.2,
            max_tokens: 400,
            messages: [
              { role: 'system', content: SYSTEM_PROMPT },
              { role: 'user', content: JSON.stringify(facts) },
            ],
          }),
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        if (!response.ok) throw new Error(`model answered HTTP ${response.status}`);
        const body = (await response.json()) as { choices?: { message?: { content?: unknown } }[] };
        const content = body.choices?.[0]?.message?.content;
        if (typeof content !== 'string' || content.trim() === '') throw new Error('model answered no text');
        return content.trim().slice(0, 4000);
      } catch (error) {
        options.onError?.(error);
        return null;
      }
    },
  };
}
