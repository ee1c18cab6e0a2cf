import { describe, expect, it } from '@jest/globals';
import { publicUrls, TOPICS, type TopicName } from '@reviews/domain';
import { createTopicIndex } from '../src/topic-index.js';

// A BASE_URL with an international host and a path needing escapes, as the config writes it.
const urls = publicUrls('https://xn--bcher-kva.example/Rev%20iews/%C3%BC');
const index = createTopicIndex(new Map(TOPICS.map((topic): [string, TopicName] => [urls[topic], topic])));

describe('createTopicIndex', () => {
  // A feed audit: `%c3%bc` was no topic while a raw `ü` and `feed%2Exml` were.
  it.each([
    ['its own spelling', 'https://xn--bcher-kva.example/Rev%20iews/%C3%BC/feed.xml'],
    ['lower-case escapes (RFC 3986 §6.2.2.1)', 'https://xn--bcher-kva.example/Rev%20iews/%c3%bc/feed.xml'],
    ['an escaped unreserved character (§6.2.2.2)', 'https://xn--bcher-kva.example/Rev%20iews/%C3%BC/feed%2exml'],
    ['the host in Unicode and upper case, the default port, a raw ü', 'HTTPS://Bücher.Example:443/Rev%20iews/ü/feed.xml'],
  ])('finds the Atom feed by %s', (_label, requested) => {
    expect(index.find(requested)).toEqual({ topic: 'feedAtom', url: urls.feedAtom });
  });

  it.each([
    ['another path case', 'https://xn--bcher-kva.example/rev%20iews/%C3%BC/feed.xml'],
    ['an escaped reserved character for the plain one', 'https://xn--bcher-kva.example/Rev%20iews%2F%C3%BC/feed.xml'],
    ['another escaped byte', 'https://xn--bcher-kva.example/Rev%20iews/%C3%BD/feed.xml'],
    ['no URL', 'not a url'],
  ])('finds no topic by %s', (_label, requested) => {
    expect(index.find(requested)).toBeNull();
  });
});
