import { z } from 'zod';
import { getParseErrorMessage } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import {
  ASPECTS,
  AspectInsight,
  FaqEntry,
  foldForSearch,
  InsightsDocument,
  Review,
  ReviewsDocument,
  SearchParams,
  SearchResult,
  ServiceInsight,
  SinceParams,
  SinceResult,
  TechnicianInsight,
  Trend,
  Ulid,
  searchParamsShape,
  type Snapshot,
} from '@reviews/domain';

export type ToolOutcome = { readonly ok: true; readonly value: Record<string, unknown> } | { readonly ok: false; readonly message: string };

/** One read-only MCP tool: schemas for tools/list and validation, and a pure function of one snapshot. */
export interface ToolDefinition {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: z.ZodObject;
  readonly output: z.ZodObject;
  run(snapshot: Snapshot, args: never): ToolOutcome;
}

/** Keeps `run`'s argument typed by its own input schema while the list stays homogeneous. */
function defineTool<I extends z.ZodObject, O extends z.ZodObject>(tool: {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  run(snapshot: Snapshot, args: z.output<I>): ToolOutcome;
}): ToolDefinition {
  return tool;
}

const found = (value: Record<string, unknown>): ToolOutcome => ({ ok: true, value });
const notFound = (message: string): ToolOutcome => ({ ok: false, message });
const NoArguments = z.strictObject({});
/**
 * The same fields as a fresh object. A schema registered with a meta id converts to a root `$ref`,
 * while MCP requires `type: "object"` at the root of an outputSchema.
 */
const rootObject = <S extends z.ZodObject>(schema: S) => z.strictObject(schema.shape);
const sameText = (a: string, b: string) => foldForSearch(a) === foldForSearch(b);

/**
 * Reviews get_reviews_since answers at most, as search_reviews does: every review since an old date
 * was the whole dataset (23 MB and 0.5 s of CPU per call at 20,000 reviews, the complexity audit),
 * more than any model's context takes.
 */
const SINCE_LIMIT = searchParamsShape.limit.unwrap().maxValue ?? 100;
const SinceToolParams = SinceParams.extend({
  limit: searchParamsShape.limit.unwrap().default(SINCE_LIMIT).describe(`Maximum number of reviews returned (1-${SINCE_LIMIT}, default ${SINCE_LIMIT}); \`matched\` counts them all.`),
});

// Lookup arguments share their bounds with the REST search filters they correspond to.
const staffName = searchParamsShape.mentions_technician.unwrap();
const serviceName = searchParamsShape.mentions_service.unwrap();

export const TOOLS: readonly ToolDefinition[] = [
  defineTool({
    name: 'get_business',
    title: 'Business profile and rating',
    description:
      'Returns the funeral home this server describes: name, description, contact details, address, opening hours, service areas, services (id + label), staff ("technicians") with aliases, review profiles, and the aggregate star rating with its 1-5 distribution and total review count. Call this first to learn valid service ids and staff names for the other tools.',
    input: NoArguments,
    output: ReviewsDocument.pick({ business: true, aggregate_rating: true }).extend({ review_count: z.int().min(0) }),
    run: (snapshot) => {
      const { business, aggregate_rating } = snapshot.reviewsDocument;
      return found({ business, aggregate_rating, review_count: aggregate_rating.review_count });
    },
  }),
  defineTool({
    name: 'search_reviews',
    title: 'Search reviews',
    description:
      'Finds published customer reviews of the funeral home matching every given filter (AND): exact `rating` or `min_rating`, date window `since`/`until` (YYYY-MM-DD, inclusive), case-insensitive `query` substring of the text, `mentions_technician` (the full name or an alias of a staff member, such as a first name; any other name, a surname alone included, matches nothing: get_technician with an unknown name lists the staff) and `mentions_service` (service id or label). Newest first; `limit` 1-100 (default 20); for the next page send `next_cursor` back as `cursor` with the same filters (null: no more). Returns `matched` (total matches, on every page), `returned`, full `reviews` and `next_cursor`, exactly like GET /api/reviews/search; every review published is verified (from a verified source). No match is an empty list, not an error.',
    input: SearchParams,
    output: rootObject(SearchResult),
    run: (snapshot, params) => found(snapshot.search.search(params)),
  }),
  defineTool({
    name: 'get_review',
    title: 'Get one review',
    description: 'Returns one review with all its fields (author, rating, date, text, source, owner reply, `verified`) by its id, as found in search results or in example_review_ids of the insight tools.',
    input: z.strictObject({ id: Ulid.describe('Review id: a ULID of 26 characters, e.g. from search_reviews.') }),
    output: rootObject(Review),
    run: (snapshot, { id }) => {
      const review = snapshot.search.review(id);
      return review ? found(review) : notFound(`No review has id ${id}. Use search_reviews to find review ids.`);
    },
  }),
  defineTool({
    name: 'get_reviews_since',
    title: 'Reviews since a date',
    description: `Returns the reviews dated on or after \`date\` (YYYY-MM-DD, inclusive), newest first: at most \`limit\` of them (1-${SINCE_LIMIT}, default ${SINCE_LIMIT}), with \`matched\` counting them all (GET /api/reviews/since/{date} returns every one). Use it to catch up on what is new since a known day; for more than ${SINCE_LIMIT}, page through search_reviews {since, cursor}.`,
    input: SinceToolParams,
    output: rootObject(SinceResult),
    run: (snapshot, { date, limit }) => {
      const result = snapshot.search.since(date);
      return found({ ...result, reviews: result.reviews.slice(0, limit) });
    },
  }),
  defineTool({
    name: 'get_insights_overview',
    title: 'Insights overview',
    description:
      'Returns the headline of the review analysis: number of reviews and their date range, overall sentiment (score -1..1 and positive/neutral/negative percentages 0-100), rating trend (improving, stable or declining), the editorial summary and a pull quote (null when not published). Start here for "what do people think of this funeral home".',
    input: NoArguments,
    output: InsightsDocument.pick({ review_count: true, date_range: true, overall_sentiment: true }).extend({
      trend: Trend,
      summary: z.string().nullable(),
      pull_quote: z.string().nullable(),
    }),
    run: (snapshot) => {
      const insights = snapshot.insightsDocument;
      return found({
        review_count: insights.review_count,
        date_range: insights.date_range,
        overall_sentiment: insights.overall_sentiment,
        trend: insights.temporal.trend,
        summary: insights.summary ?? null,
        pull_quote: insights.pull_quote ?? null,
      });
    },
  }),
  defineTool({
    name: 'get_aspect_sentiment',
    title: 'Sentiment about one aspect',
    description: `Returns how reviewers feel about one aspect of the service: mention count, positive/neutral/negative counts, positive percentage, score -1..1, top phrases and example review ids. \`aspect\` is an id or label, case-insensitive, one of: ${ASPECTS.map((a) => a.id).join(', ')}.`,
    input: z.strictObject({ aspect: z.string().min(1).max(100).describe(`Aspect id or label, e.g. ${ASPECTS[0].id} or "${ASPECTS[0].label}".`) }),
    output: rootObject(AspectInsight),
    run: (snapshot, { aspect }) => {
      const aspects = snapshot.insightsDocument.aspects;
      const match = aspects.find((a) => sameText(a.id, aspect) || sameText(a.label, aspect));
      return match ? found(match) : notFound(`Unknown aspect "${aspect}". Valid aspects: ${aspects.map((a) => `${a.id} (${a.label})`).join(', ')}.`);
    },
  }),
  defineTool({
    name: 'get_technician',
    title: 'Feedback about a staff member',
    description:
      'Returns what reviews say about one staff member (funeral director, embalmer, counsellor; the interface calls them technicians): role, aliases, mention count, sentiment counts and score, example review ids. `name` is the full name or an alias such as a first name, case-insensitive. Follow up with search_reviews {mentions_technician} to read the reviews.',
    input: z.strictObject({ name: staffName.describe('Staff member by full name or alias, case-insensitive.') }),
    output: rootObject(TechnicianInsight),
    run: (snapshot, { name }) => {
      const technician = snapshot.search.technician(name);
      const insight = technician && snapshot.insightsDocument.entities.technicians.find((t) => t.name === technician.name);
      if (insight) return found(insight);
      const known = snapshot.reviewsDocument.business.technicians.map((t) => (t.aliases.length > 0 ? `${t.name} (${t.aliases.join(', ')})` : t.name));
      return notFound(`No staff member is called "${name}". Known staff: ${known.join('; ') || 'none'}.`);
    },
  }),
  defineTool({
    name: 'get_service',
    title: 'Feedback about a service',
    description:
      'Returns what reviews say about one service the funeral home offers (e.g. direct cremation, memorial service): mention count, sentiment counts and score, example review ids. `service` is the service id or label, case-insensitive; get_business lists them.',
    input: z.strictObject({ service: serviceName.describe('Service id (e.g. direct-cremation) or label, case-insensitive.') }),
    output: rootObject(ServiceInsight),
    run: (snapshot, { service }) => {
      const ref = snapshot.search.service(service);
      const insight = ref && snapshot.insightsDocument.entities.services.find((s) => s.id === ref.id);
      if (insight) return found(insight);
      const known = snapshot.reviewsDocument.business.services.map((s) => `${s.id} (${s.label})`);
      return notFound(`Unknown service "${service}". Known services: ${known.join(', ')}.`);
    },
  }),
  defineTool({
    name: 'get_faq',
    title: 'Frequently asked questions',
    description:
      'Returns questions families ask, with answers grounded in reviews and the ids of the reviews behind each answer. Optional `query` keeps only entries whose question or answer contains it (case-insensitive); no match is an empty list.',
    input: z.strictObject({ query: searchParamsShape.query.unwrap().describe('Case-insensitive text to look for in questions and answers.').optional() }),
    output: z.strictObject({ faq: z.array(FaqEntry) }),
    run: (snapshot, { query }) => {
      // Folded as search_reviews folds (a final sigma is a sigma).
      const needle = query === undefined ? undefined : foldForSearch(query);
      const faq = snapshot.insightsDocument.faq.filter((entry) => needle === undefined || foldForSearch(`${entry.question}\n${entry.answer}`).includes(needle));
      return found({ faq });
    },
  }),
  defineTool({
    name: 'get_rating_trend',
    title: 'Monthly rating trend',
    description:
      'Returns the monthly series (month YYYY-MM, review count, average rating, sentiment score; null for months without reviews) and the overall trend: improving, stable or declining, from the mean rating of the latest 6 months with reviews against the 6 before.',
    input: NoArguments,
    output: InsightsDocument.shape.temporal,
    run: (snapshot) => found(snapshot.insightsDocument.temporal),
  }),
];

export const TOOLS_BY_NAME: ReadonlyMap<string, ToolDefinition> = new Map(TOOLS.map((tool) => [tool.name, tool]));

export type ParsedArguments = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

/**
 * A tool call's arguments as the tool's input schema parses them (absent arguments are none), as McpServer checks
 * them, or the message of the isError result that refuses them: each problem as `<message> at <argument>`, the
 * SDK's wording, as for prompts (promptProblem). McpServer would lead it with "MCP error -32602: Input validation
 * error:", which reads like a protocol error in what is a tool result.
 */
export function parseArguments(tool: ToolDefinition, args: unknown): ParsedArguments {
  const parsed = tool.input.safeParse(args ?? {});
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, message: `Invalid arguments for tool ${tool.name}: ${getParseErrorMessage(parsed.error)}` };
}
