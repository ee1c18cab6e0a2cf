import type { TopicName } from '@reviews/domain';
import { normalizeEscapes } from '@reviews/runtime';

export interface TopicMatch {
  readonly topic: TopicName;
  /** The hub's own URL of the topic: the one it advertises, stores, verifies and delivers. */
  readonly url: string;
}

export interface TopicIndex {
  /** The hub's own topic URLs. */
  readonly urls: readonly string[];
  /**
   * The topic a requested URL names, or null when it names none of the hub's. The caller refuses
   * whitespace and control characters first: the parser would silently strip them.
   */
  find(requested: string): TopicMatch | null;
}

/**
 * The hub's topics, found by any spelling equivalent to their URL (WebSub §5.1.1): subscribers copy
 * `rel="self"` by hand or through libraries that re-serialise it, and `HTTPS://Host:443/x` names
 * the same resource as `https://host/x`. Anything else, a different path case included, is no topic.
 */
export function createTopicIndex(topics: ReadonlyMap<string, TopicName>): TopicIndex {
  const byNormalForm = new Map<string, TopicMatch>();
  for (const [url, topic] of topics) byNormalForm.set(normalForm(url) ?? url, { topic, url });
  return {
    urls: [...topics.keys()],
    find: (requested) => {
      const key = normalForm(requested);
      return key === null ? null : (byNormalForm.get(key) ?? null);
    },
  };
}

/**
 * RFC 3986 §6.2.2–6.2.3 normalisation: escapes in normal form (§6.2.2.1–2, which the WHATWG parser
 * leaves alone: `%c3` stays lower case), then the parser lower-cases scheme and host, drops the
 * scheme's default port and an empty port, and resolves dot segments. Null when the URL does not parse.
 */
function normalForm(url: string): string | null {
  return URL.parse(normalizeEscapes(url))?.href ?? null;
}
