import { z } from 'zod';
import { getParseErrorMessage } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import { IsoDate, SearchParams, type SearchParamsInput, type Snapshot } from '@reviews/domain';

// The prompts of the server, with the rules the gateway checks before the SDK (promptProblem). McpServer builds a
// non-strict object from a prompt's raw shape, so it drops an unknown argument and has no place for a rule across
// arguments, and it looks names up in a plain object, so `constructor` or `__proto__` is a prompt "disabled".

/** One prompt: what prompts/list shows, every rule its arguments must meet, and the messages it renders. */
export interface PromptDefinition {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** The arguments as McpServer.registerPrompt takes them; prompts/list describes them from it. */
  readonly shape: z.ZodRawShape;
  /** The arguments' rules, strict: checked by the gateway before the SDK sees the request. */
  readonly args: z.ZodType;
  render(snapshot: Snapshot | null, args: never): GetPromptResult;
}

/** Keeps `render`'s argument typed by the prompt's own shape while the list stays homogeneous. */
function definePrompt<S extends z.ZodRawShape>(prompt: {
  name: string;
  title: string;
  description: string;
  shape: S;
  args: z.ZodType;
  render(snapshot: Snapshot | null, args: z.output<z.ZodObject<S>>): GetPromptResult;
}): PromptDefinition {
  return prompt;
}

const ReviewDigestArgs = z.strictObject({
  since: IsoDate.describe('First day of the period, YYYY-MM-DD.'),
  until: IsoDate.optional().describe('Last day of the period, YYYY-MM-DD; defaults to today.'),
});

export const PROMPTS: readonly PromptDefinition[] = [
  definePrompt({
    name: 'review_digest',
    title: 'Review digest for a period',
    description: 'Asks the model to summarise the reviews of a period for the funeral home team: volume, rating, praise, complaints, staff mentioned, follow-ups.',
    shape: ReviewDigestArgs.shape,
    // The period is the since/until of the search_reviews call the prompt asks for, so it meets the search
    // parameters' rules too (until on or after since), as the tool and GET /api/reviews/search do. The identity
    // transform only widens the static type: pipe wants the target's input type to be the source's output type.
    args: ReviewDigestArgs.transform((period): SearchParamsInput => period).pipe(SearchParams),
    render: (snapshot, { since, until }) => {
      const window = until === undefined ? `{"since":"${since}","limit":100}` : `{"since":"${since}","until":"${until}","limit":100}`;
      const subject = snapshot ? snapshot.reviewsDocument.business.name : 'the funeral home';
      const text = [
        `Write a digest of the reviews of ${subject} dated from ${since} to ${until ?? 'today'}, for the funeral home's team.`,
        `Call search_reviews with ${window}; while "next_cursor" is not null, call it again with the same arguments and "cursor" set to it, so every review is read.`,
        'Call get_insights_overview for context, and get_aspect_sentiment or get_technician for anything that stands out.',
        'Cover: number of reviews and average rating in the period; what families praised; every complaint or problem, with its review id; staff members named; suggested follow-ups.',
        'Quote reviewers only verbatim and sparingly. If the period has no reviews, say so.',
      ].join('\n');
      return { description: `Review digest from ${since} to ${until ?? 'today'}`, messages: [{ role: 'user', content: { type: 'text', text } }] };
    },
  }),
];

const PROMPTS_BY_NAME = new Map(PROMPTS.map((prompt) => [prompt.name, prompt]));

/**
 * The JSON-RPC -32602 message for a prompts/get of a prompt this server does not have or with arguments its
 * rules refuse, else null. MCP 2025-06-18 server/prompts "Error Handling": invalid prompt name and missing
 * required arguments are -32602. The wording is the SDK's, each problem as `<message> at <argument>`.
 */
export function promptProblem(name: string, args: unknown): string | null {
  const prompt = PROMPTS_BY_NAME.get(name);
  if (!prompt) return `Prompt not found: ${name}. Known prompts: ${[...PROMPTS_BY_NAME.keys()].join(', ')}`;
  const parsed = prompt.args.safeParse(args ?? {});
  return parsed.success ? null : `Invalid arguments for prompt ${name}: ${getParseErrorMessage(parsed.error)}`;
}
