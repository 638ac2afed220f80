/**
 * A client of the OpenAI chat-completions protocol (OpenAI, or any server speaking it: a local
 * model, a gateway). The apps keep their prompts and what they do with an answer.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatCompletion {
  text: string;
  model: string;
  promptTokens: number | null;
  completionTokens: number | null;
}

/** A chat model behind an OpenAI-compatible API; rejects on any failure (timeout, HTTP error, empty answer). */
export interface ChatModel {
  readonly model: string;
  complete(messages: ChatMessage[], options: { json: boolean; maxTokens: number }): Promise<ChatCompletion>;
}

export interface OpenAiCompatibleOptions {
  /** Base URL of the API, e.g. https://api.openai.com/v1 (the client appends /chat/completions). */
  url: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

interface ChatCompletionsBody {
  model?: unknown;
  choices?: { message?: { content?: unknown } }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

const tokens = (value: unknown) => (typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null);

/** The model at `url`; every request is bounded by `timeoutMs`. */
export function createOpenAiCompatibleModel(options: OpenAiCompatibleOptions): ChatModel {
  const endpoint = `${options.url.replace(/\/+$/, '')}/chat/completions`;
  return {
    model: options.model,
    async complete(messages, { json, maxTokens }) {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: options.model,
          temperature: 0.2,
          max_tokens: maxTokens,
          messages,
          ...(json ? { response_format: { type: 'json_object' } } : {}),
        }),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      if (!response.ok) throw new Error(`model answered HTTP ${response.status}`);
      const body = (await response.json()) as ChatCompletionsBody;
      const content = body.choices?.[0]?.message?.content;
      if (typeof content !== 'string' || content.trim() === '') throw new Error('model answered no text');
      return {
        text: content.trim(),
        model: typeof body.model === 'string' && body.model ? body.model : options.model,
        promptTokens: tokens(body.usage?.prompt_tokens),
        completionTokens: tokens(body.usage?.completion_tokens),
      };
    },
  };
}
