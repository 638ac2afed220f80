/**
 * An optional narrative on top of the computed analysis. The deterministic summary is the
 * product; a model only retells the facts it is given, and nothing depends on its answer.
 */
export interface NarrativeWriter {
  readonly model: string | null;
  /** Answers the narrative, or null when no model is configured or the model failed. */
  write(facts: unknown): Promise<string | null>;
}

/** The built-in writer: no model, no narrative. */
export const noNarrative: NarrativeWriter = {
  model: null,
  write: async () => null,
};
