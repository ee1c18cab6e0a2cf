/**
 * The path of every public resource, as the routers serve it and the OpenAPI document and the
 * published URLs name it.
 */
export const PATHS = {
  reviews: '/reviews.json',
  insights: '/insights.json',
  feedJson: '/api/feed.json',
  feedAtom: '/feed.xml',
  openapi: '/.well-known/openapi.json',
  search: '/api/reviews/search',
  /** Followed by the date: `/api/reviews/since/{date}`. */
  sincePrefix: '/api/reviews/since/',
  mcp: '/mcp',
  hub: '/api/websub/hub',
  health: '/healthz',
  ready: '/readyz',
} as const;

/** Every absolute URL the service publishes is built from BASE_URL, never from a request. */
export interface PublicUrls {
  readonly base: string;
  readonly hub: string;
  readonly reviews: string;
  readonly insights: string;
  readonly feedJson: string;
  readonly feedAtom: string;
  readonly openapi: string;
  readonly mcp: string;
}

export function publicUrls(baseUrl: string): PublicUrls {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    base,
    hub: `${base}${PATHS.hub}`,
    reviews: `${base}${PATHS.reviews}`,
    insights: `${base}${PATHS.insights}`,
    feedJson: `${base}${PATHS.feedJson}`,
    feedAtom: `${base}${PATHS.feedAtom}`,
    openapi: `${base}${PATHS.openapi}`,
    mcp: `${base}${PATHS.mcp}`,
  };
}

/** The WebSub topics: the representations a subscriber can follow. */
export const TOPICS = ['reviews', 'feedJson', 'feedAtom'] as const;
export type TopicName = (typeof TOPICS)[number];

export function topicUrl(urls: PublicUrls, topic: TopicName): string {
  return urls[topic];
}

/** `Link` header value advertising the hub on a topic, identical on GET and in notifications. */
export function topicLinkHeader(urls: PublicUrls, topic: TopicName): string {
  return `<${urls.hub}>; rel="hub", <${urls[topic]}>; rel="self"`;
}
