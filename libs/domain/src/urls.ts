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
    hub: `${base}/api/websub/hub`,
    reviews: `${base}/reviews.json`,
    insights: `${base}/insights.json`,
    feedJson: `${base}/api/feed.json`,
    feedAtom: `${base}/feed.xml`,
    openapi: `${base}/.well-known/openapi.json`,
    mcp: `${base}/mcp`,
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
