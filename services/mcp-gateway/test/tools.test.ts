import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ASPECTS, buildSnapshotFromInput, SearchParams, searchParamsShape, type SearchParamsInput, type Snapshot } from '@reviews/domain';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';
import { BASE_URL, connectClient, fixtureSnapshot, startGateway, type RunningGateway } from './helpers.js';
import { TOOLS } from '../src/tools.js';

const TOOL_NAMES = [
  'get_business',
  'search_reviews',
  'get_review',
  'get_reviews_since',
  'get_insights_overview',
  'get_aspect_sentiment',
  'get_technician',
  'get_service',
  'get_faq',
  'get_rating_trend',
];

function text(result: CallToolResult): string {
  const [first] = result.content;
  if (first?.type !== 'text') throw new Error('expected a text block');
  return first.text;
}

describe('MCP tools, resources and prompts', () => {
  const snapshot: Snapshot = fixtureSnapshot();
  let gateway: RunningGateway;
  let client: Client;

  const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const ok = async (name: string, args: Record<string, unknown> = {}) => {
    const result = await call(name, args);
    if (result.isError) throw new Error(`${name} failed: ${text(result)}`);
    // The text block carries exactly the structured result, for clients that ignore structuredContent.
    expect(JSON.parse(text(result))).toEqual(result.structuredContent);
    return result.structuredContent as Record<string, unknown>;
  };
  const failure = async (name: string, args: Record<string, unknown> = {}) => {
    const result = await call(name, args);
    expect(result.isError).toBe(true);
    return text(result);
  };

  beforeAll(async () => {
    gateway = await startGateway({ snapshot });
    ({ client } = await connectClient(gateway.url));
  });
  afterAll(async () => {
    await client.close();
    await gateway.close();
  });

  describe('tools/list', () => {
    it('lists every tool as read-only, closed-world and idempotent, with title, input and output schemas', async () => {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort());
      for (const tool of tools) {
        expect(tool.title).toEqual(expect.any(String));
        expect(tool.description?.length).toBeGreaterThan(60);
        expect(tool.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false, idempotentHint: true });
        expect(tool.inputSchema.type).toBe('object');
        expect(tool.outputSchema?.type).toBe('object');
      }
    });

    it('gives search_reviews exactly the input schema of the shared SearchParams', async () => {
      const { tools } = await client.listTools();
      const search = tools.find((tool) => tool.name === 'search_reviews');
      expect(search?.inputSchema).toEqual(toJsonSchemaCompat(SearchParams, { strictUnions: true, pipeStrategy: 'input' }));
      expect(Object.keys(search?.inputSchema.properties ?? {}).sort()).toEqual(Object.keys(searchParamsShape).sort());
      expect(search?.inputSchema).toMatchObject({ additionalProperties: false, properties: { limit: { default: 20, minimum: 1, maximum: 100 } } });
    });

    it('describes the reviews as verified customer reviews, as the service publishes only those', async () => {
      const instructions = client.getInstructions() ?? '';
      expect(instructions).toContain('verified customer reviews');
      const { resources } = await client.listResources();
      expect(resources.find((resource) => resource.name === 'reviews')?.description).toContain('every verified review');
    });
  });

  // A dataset's unverified reviews are not published (README): no tool shows one, whatever the path.
  describe('a dataset holding unverified reviews', () => {
    const input = buildDataset({ reviews: 40, seed: 13 });
    const unverified = input.reviews.filter((_, i) => i % 4 === 0).map((review) => review.id);
    const withUnverified = { ...input, reviews: input.reviews.map((review) => (unverified.includes(review.id) ? { ...review, verified: false } : review)) };
    let other: RunningGateway;
    let otherClient: Client;

    beforeAll(async () => {
      other = await startGateway({ snapshot: buildSnapshotFromInput(withUnverified, { baseUrl: BASE_URL, publishedAt: new Date('2025-07-01T12:00:00Z') }) });
      ({ client: otherClient } = await connectClient(other.url));
    });
    afterAll(async () => {
      await otherClient.close();
      await other.close();
    });

    it('is served without them: search, reviews since a date, lookups by id and the counts', async () => {
      const callOther = async (name: string, args: Record<string, unknown> = {}) => (await otherClient.callTool({ name, arguments: args })) as CallToolResult;
      const search = (await callOther('search_reviews', { limit: 100 })).structuredContent as { matched: number; reviews: { id: string; verified: boolean }[] };
      expect(search.matched).toBe(30);
      expect(search.reviews.every((review) => review.verified && !unverified.includes(review.id))).toBe(true);
      const since = (await callOther('get_reviews_since', { date: '2000-01-01' })).structuredContent as { reviews: { id: string }[] };
      expect(since.reviews.some((review) => unverified.includes(review.id))).toBe(false);
      const lookup = await callOther('get_review', { id: unverified[0] });
      expect(lookup.isError).toBe(true);
      const business = (await callOther('get_business')).structuredContent as { aggregate_rating: { review_count: number } };
      expect(business.aggregate_rating.review_count).toBe(30);
    });
  });

  describe('search_reviews', () => {
    const table: SearchParamsInput[] = [
      {},
      { rating: 5, limit: 3 },
      { min_rating: 3.5 },
      { since: '2024-06-01', until: '2024-12-31' },
      { query: 'kind' },
      { query: 'CAFÉ' },
      { mentions_technician: 'maggie' },
      { mentions_technician: 'Daniel Okafor', min_rating: 2 },
      { mentions_service: 'Direct cremation' },
      { mentions_service: 'memorial-service', limit: 100 },
      { query: 'no review says this' },
    ];
    it.each(table)('returns what GET /api/reviews/search returns for %j', async (args) => {
      expect(await ok('search_reviews', args)).toEqual(snapshot.search.search(SearchParams.parse(args)));
    });

    it('lists every invalid argument with its path', async () => {
      const message = await failure('search_reviews', { rating: 6, since: '2025-02-30', limit: 0, colour: 'red' });
      expect(message).toMatch(/rating/);
      expect(message).toMatch(/since/);
      expect(message).toMatch(/limit/);
      expect(message).toMatch(/colour/);
    });

    it('refuses an invalid argument with a plain statement naming it, not worded as a protocol error', async () => {
      expect(await failure('search_reviews', { limit: 500 })).toBe('Invalid arguments for tool search_reviews: Too big: expected number to be <=100 at limit');
      expect(await failure('get_review', {})).toBe('Invalid arguments for tool get_review: Invalid input: expected string, received undefined at id');
    });

    it('rejects since after until at `until`', async () => {
      expect(await failure('search_reviews', { since: '2025-02-01', until: '2025-01-01' })).toMatch(/until must be on or after since at until/);
    });

    it('rejects arguments of the wrong type instead of coercing them', async () => {
      expect(await failure('search_reviews', { rating: '5' })).toMatch(/rating/);
    });
  });

  describe('lookups', () => {
    const newest = () => snapshot.reviewsDocument.reviews[0]!;

    it('get_business returns the profile, aggregate rating and review count', async () => {
      const { business, aggregate_rating } = snapshot.reviewsDocument;
      expect(await ok('get_business')).toEqual({ business, aggregate_rating, review_count: aggregate_rating.review_count });
    });

    it('get_business takes no arguments', async () => {
      expect(await failure('get_business', { businessId: 'x' })).toMatch(/businessId/);
    });

    it('get_review returns one review by id', async () => {
      expect(await ok('get_review', { id: newest().id })).toEqual(newest());
    });

    it('get_review explains an unknown or malformed id', async () => {
      expect(await failure('get_review', { id: '0'.repeat(26) })).toMatch(/No review has id/);
      expect(await failure('get_review', { id: 'abc' })).toMatch(/ULID.*at id/);
    });

    it('get_reviews_since matches the since endpoint, up to its limit', async () => {
      expect(await ok('get_reviews_since', { date: '2025-01-01' })).toEqual(snapshot.search.since('2025-01-01'));
      // The complexity audit: an old date answered the whole dataset, 23 MB at 20,000 reviews.
      const all = snapshot.search.since('2000-01-01');
      expect(await ok('get_reviews_since', { date: '2000-01-01', limit: 2 })).toEqual({ ...all, reviews: all.reviews.slice(0, 2) });
      expect(await failure('get_reviews_since', { date: '2000-01-01', limit: 101 })).toMatch(/limit/);
      expect(await failure('get_reviews_since', { date: '2025-13-01' })).toMatch(/must be a real calendar date .* at date/);
      expect(await failure('get_reviews_since', {})).toMatch(/date/);
    });

    it('get_insights_overview returns the headline figures', async () => {
      const insights = snapshot.insightsDocument;
      expect(await ok('get_insights_overview')).toEqual({
        review_count: insights.review_count,
        date_range: insights.date_range,
        overall_sentiment: insights.overall_sentiment,
        trend: insights.temporal.trend,
        summary: 'Families praise the staff.',
        pull_quote: null,
      });
    });

    it('get_aspect_sentiment finds an aspect by id or label, case-insensitive', async () => {
      const expected = snapshot.insightsDocument.aspects.find((a) => a.id === 'attention_to_detail');
      expect(await ok('get_aspect_sentiment', { aspect: 'attention_to_detail' })).toEqual(expected);
      expect(await ok('get_aspect_sentiment', { aspect: 'ATTENTION_TO_DETAIL' })).toEqual(expected);
      expect(await ok('get_aspect_sentiment', { aspect: 'Attention To Detail' })).toEqual(expected);
    });

    it('get_aspect_sentiment lists the valid aspects when given an unknown one', async () => {
      const message = await failure('get_aspect_sentiment', { aspect: 'parking' });
      for (const aspect of ASPECTS) expect(message).toContain(aspect.id);
    });

    it('get_technician finds staff by name or alias', async () => {
      const expected = snapshot.insightsDocument.entities.technicians.find((t) => t.name === 'Margaret Ellis');
      expect(await ok('get_technician', { name: 'maggie' })).toEqual(expected);
      expect(await ok('get_technician', { name: 'MARGARET ELLIS' })).toEqual(expected);
      expect(await failure('get_technician', { name: 'Bob' })).toMatch(/Known staff: Margaret Ellis \(Maggie, Mrs Ellis\)/);
    });

    it('get_service finds a service by id or label', async () => {
      const expected = snapshot.insightsDocument.entities.services.find((s) => s.id === 'memorial-service');
      expect(await ok('get_service', { service: 'Memorial Service' })).toEqual(expected);
      expect(await ok('get_service', { service: 'memorial-service' })).toEqual(expected);
      expect(await failure('get_service', { service: 'burial-at-sea' })).toMatch(/direct-cremation \(Direct cremation\)/);
    });

    it('get_faq filters questions and answers by text', async () => {
      const { faq } = snapshot.insightsDocument;
      expect(await ok('get_faq')).toEqual({ faq });
      expect(await ok('get_faq', { query: 'PRICES' })).toEqual({ faq });
      expect(await ok('get_faq', { query: 'embalming' })).toEqual({ faq: [] });
      expect(await failure('get_faq', { query: '' })).toMatch(/query/);
    });

    it('get_rating_trend returns the monthly series and trend', async () => {
      expect(await ok('get_rating_trend')).toEqual(snapshot.insightsDocument.temporal);
    });

    it('answers an unknown tool with JSON-RPC -32602 naming it (MCP 2025-06-18 server/tools: a protocol error)', async () => {
      await expect(call('delete_reviews')).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('Unknown tool: delete_reviews') });
    });
  });

  describe('resources', () => {
    it('has no resource templates: every document has a fixed URI', async () => {
      expect((await client.listResourceTemplates()).resourceTemplates).toEqual([]);
    });


    it('lists the public JSON documents under their public URLs', async () => {
      const { resources } = await client.listResources();
      expect(resources.map((r) => [r.uri, r.mimeType])).toEqual([
        [`${BASE_URL}/reviews.json`, 'application/json'],
        [`${BASE_URL}/insights.json`, 'application/json'],
        [`${BASE_URL}/api/feed.json`, 'application/json'],
      ]);
    });

    it('reads a resource as the exact bytes the REST endpoint serves', async () => {
      const { contents } = await client.readResource({ uri: `${BASE_URL}/insights.json` });
      expect(contents).toEqual([{ uri: `${BASE_URL}/insights.json`, mimeType: 'application/json', text: snapshot.representations.insights.identity.body.toString('utf8') }]);
    });

    it('answers an unknown URI with -32002 and a message naming it once, without a code prefix on the wire', async () => {
      const known = `${BASE_URL}/reviews.json, ${BASE_URL}/insights.json, ${BASE_URL}/api/feed.json`;
      // The SDK client adds "MCP error <code>: " itself, so the wire message must not carry it already.
      await expect(client.readResource({ uri: `${BASE_URL}/secrets.json` })).rejects.toMatchObject({
        code: -32002,
        message: `MCP error -32002: Resource not found: ${BASE_URL}/secrets.json. Known resources: ${known}`,
        data: { uri: `${BASE_URL}/secrets.json` },
      });
    });
  });

  describe('prompts', () => {
    it('offers review_digest, which points the model at the tools for the period', async () => {
      const { prompts } = await client.listPrompts();
      expect(prompts.map((p) => p.name)).toEqual(['review_digest']);
      const prompt = await client.getPrompt({ name: 'review_digest', arguments: { since: '2025-01-01', until: '2025-03-31' } });
      const [message] = prompt.messages;
      expect(message?.content).toMatchObject({ type: 'text', text: expect.stringContaining('{"since":"2025-01-01","until":"2025-03-31","limit":100}') });
      expect(message?.content).toMatchObject({ text: expect.stringContaining('Evergreen Funeral Home') });
    });

    it('rejects an invalid date', async () => {
      await expect(client.getPrompt({ name: 'review_digest', arguments: { since: 'last week' } })).rejects.toMatchObject({ code: -32602 });
    });

    // The period goes to search_reviews, so it meets the same rules: the tool refuses both of these too.
    it.each([
      ['until before since, at until', { since: '2025-05-01', until: '2025-01-01' }, 'until must be on or after since at until'],
      ['an unknown argument, by name', { since: '2025-01-01', colour: 'red' }, 'Unrecognized key: "colour"'],
    ])('rejects %s with -32602, as search_reviews does', async (_label, args, problem) => {
      await expect(client.getPrompt({ name: 'review_digest', arguments: args })).rejects.toMatchObject({
        code: -32602,
        message: `MCP error -32602: Invalid arguments for prompt review_digest: ${problem}`,
      });
      expect(await failure('search_reviews', args)).toContain(problem);
    });
  });

  // The SDK looks names up in plain objects, where these are Object.prototype's members.
  describe.each(['nope', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'])('the unknown name %s', (name) => {
    it('is a prompt not found, -32602', async () => {
      await expect(client.getPrompt({ name, arguments: {} })).rejects.toMatchObject({ code: -32602, message: `MCP error -32602: Prompt not found: ${name}. Known prompts: review_digest` });
    });

    it('is an unknown tool, -32602', async () => {
      await expect(call(name)).rejects.toMatchObject({ code: -32602, message: expect.stringContaining(`Unknown tool: ${name}. Known tools: `) });
    });

    it('is an unknown resource, -32002', async () => {
      await expect(client.readResource({ uri: name })).rejects.toMatchObject({ code: -32002, message: expect.stringContaining(`Resource not found: ${name}. Known resources: `) });
    });
  });

  // MCP 2025-06-18 server/utilities/pagination: an invalid cursor SHOULD be -32602. Every list is one
  // page without nextCursor, so no cursor was ever issued and any cursor is invalid.
  it.each([
    ['tools/list', (cursor?: string) => client.listTools(cursor === undefined ? undefined : { cursor })],
    ['prompts/list', (cursor?: string) => client.listPrompts(cursor === undefined ? undefined : { cursor })],
    ['resources/list', (cursor?: string) => client.listResources(cursor === undefined ? undefined : { cursor })],
    ['resources/templates/list', (cursor?: string) => client.listResourceTemplates(cursor === undefined ? undefined : { cursor })],
  ])('answers %s in one page and refuses a cursor it never issued with -32602', async (_method, list) => {
    expect(await list()).not.toHaveProperty('nextCursor');
    for (const cursor of ['zzz', '']) {
      await expect(list(cursor)).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('cursor') });
    }
  });

  it('counts tool calls by tool and outcome, and initialized sessions', async () => {
    const value = async (name: string, labels: Record<string, string> = {}, series = name) => {
      const values = (await gateway.metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
      // Histograms report buckets, sum and count as one metric; `metricName` tells them apart.
      const metric = values.find((v) => ((v as { metricName?: string }).metricName ?? name) === series && Object.entries(labels).every(([k, l]) => v.labels[k] === l));
      return metric?.value ?? 0;
    };
    const okBefore = await value('mcp_tool_calls_total', { tool: 'get_business', outcome: 'ok' });
    const errorBefore = await value('mcp_tool_calls_total', { tool: 'search_reviews', outcome: 'error' });
    const unknownBefore = await value('mcp_tool_calls_total', { tool: 'unknown', outcome: 'error' });
    const sessionsBefore = await value('mcp_sessions_initialized_total');
    await ok('get_business');
    await failure('search_reviews', { rating: 0 });
    await expect(call('no_such_tool')).rejects.toMatchObject({ code: -32602 });
    // A call naming no tool at all is still a call that failed.
    await expect(client.request({ method: 'tools/call', params: { arguments: {} } } as never, CallToolResultSchema)).rejects.toMatchObject({ code: -32602 });
    const second = await connectClient(gateway.url);
    await second.client.close();
    expect(await value('mcp_tool_calls_total', { tool: 'get_business', outcome: 'ok' })).toBe(okBefore + 1);
    expect(await value('mcp_tool_calls_total', { tool: 'search_reviews', outcome: 'error' })).toBe(errorBefore + 1);
    expect(await value('mcp_tool_calls_total', { tool: 'unknown', outcome: 'error' })).toBe(unknownBefore + 2);
    expect(await value('mcp_sessions_initialized_total')).toBe(sessionsBefore + 1);
    expect(await value('http_request_duration_seconds', { service: 'mcp-gateway', route: '/mcp', status_code: '200' }, 'http_request_duration_seconds_count')).toBeGreaterThan(0);
  });
});

describe('MCP gateway before the first dataset is loaded', () => {
  let gateway: RunningGateway;
  let client: Client;
  beforeAll(async () => {
    gateway = await startGateway({ snapshot: null });
    ({ client } = await connectClient(gateway.url));
  });
  afterAll(async () => {
    await client.close();
    await gateway.close();
  });

  it('still initializes and lists tools, and tools answer "not loaded yet" as a tool error', async () => {
    expect((await client.listTools()).tools).toHaveLength(TOOL_NAMES.length);
    for (const name of ['get_business', 'search_reviews']) {
      const result = (await client.callTool({ name, arguments: {} })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(/not loaded yet/);
    }
  });

  it('answers resources/read with -32002 rather than a server error', async () => {
    await expect(client.readResource({ uri: `${BASE_URL}/reviews.json` })).rejects.toMatchObject({ code: -32002, message: expect.stringMatching(/^MCP error -32002: The reviews dataset is not loaded yet/) });
  });
});

// toLowerCase() writes a capital Σ ending a word as ς: get_faq now folds as search_reviews does.
describe('get_faq on Greek text', () => {
  it('finds a question whatever form of sigma the query ends a word with', () => {
    const input = buildDataset();
    const [first] = input.analysis.faq;
    if (!first) throw new Error('the fixture has an FAQ entry');
    input.analysis.faq = [{ ...first, question: 'Πώς ήταν η ΟΔΟΣΤΡΩΣΗ;' }];
    const snapshot = buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: new Date('2025-07-01T12:00:00Z') });
    const faq = TOOLS.find((tool) => tool.name === 'get_faq')!;
    for (const query of ['ΟΔΟΣ', 'οδος', 'οδοσ']) {
      expect({ query, outcome: faq.run(snapshot, { query } as never) }).toMatchObject({ query, outcome: { ok: true, value: { faq: [expect.objectContaining({ question: 'Πώς ήταν η ΟΔΟΣΤΡΩΣΗ;' })] } } });
    }
  });
});

describe('tools on a dataset with a pull quote and FAQ answers of their own', () => {
  const input = buildDataset();
  const [first] = input.analysis.faq;
  if (!first) throw new Error('the fixture has an FAQ entry');
  input.analysis.faq = [{ ...first, question: 'Can we bring our own flowers?', answer: 'Yes; the chapel keeps vases for them.' }];
  input.analysis.pull_quote = 'Kindness from the first call to the last.';
  const snapshot = buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: new Date('2025-07-01T12:00:00Z') });
  const run = (name: string, args: Record<string, unknown>) => TOOLS.find((tool) => tool.name === name)!.run(snapshot, args as never);

  it('get_insights_overview gives the pull quote', () => {
    expect(run('get_insights_overview', {})).toMatchObject({ ok: true, value: { pull_quote: 'Kindness from the first call to the last.' } });
  });

  it('get_faq finds an entry by words only its answer holds', () => {
    expect(run('get_faq', { query: 'VASES' })).toMatchObject({ ok: true, value: { faq: [expect.objectContaining({ question: 'Can we bring our own flowers?' })] } });
  });
});
