import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FEED_SIZE, publicUrls, renderAtomFeed } from '@reviews/domain';
import { sampleDocument, TRICKY_REVIEW, URLS } from './sample-document.js';

const ATOM_RNC = fileURLToPath(new URL('./fixtures/atom.rnc', import.meta.url));

// jing is the Debian package `jing` (Java); CI installs it. Without it the schema test is skipped, and says so.
const HAS_JING = spawnSync('jing', [], { stdio: 'ignore' }).error === undefined;
const withJing = HAS_JING ? it : it.skip;
const JING_NOTE = HAS_JING ? '' : ' [SKIPPED: jing is not installed; apt-get install -y jing]';

/** Validates the files against the RFC 4287 RELAX NG schema in one JVM start; resolves to jing's error lines. */
function jing(files: readonly string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile('jing', ['-c', ATOM_RNC, ...files], { timeout: 30_000 }, (error, stdout) => {
      if (error && typeof error.code !== 'number') return reject(error);
      resolve(stdout.split('\n').filter((line) => line.trim() !== ''));
    });
  });
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'atom-feed-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeFeed(name: string, xml: string): string {
  const file = join(dir, name);
  writeFileSync(file, xml, 'utf8');
  return file;
}

function entryIds(xml: string): string[] {
  return [...xml.matchAll(/<entry>\s*<id>([^<]*)<\/id>/g)].map((match) => match[1] as string);
}

/** Each entry's alternate link (the feed's own has a type): the review's source URL, or `<reviews URL>#<id>`. */
function entryLinks(xml: string): string[] {
  return [...xml.matchAll(/<link rel="alternate" href="([^"]*)"\/>/g)].map((match) => match[1] as string);
}

// Name-based (version 5) UUIDs of the sample business's id and of TRICKY_REVIEW's id within it, computed independently
// (Python: uuid.uuid5(uuid.UUID('031cba91-26dc-4cc1-8d90-49308eb016ca'), 'evergreen-funeral-home'), then uuid5 of that and the id).
const FEED_ID = 'urn:uuid:86fec333-c92e-50ef-987b-0253231d6c9c';
const TRICKY_ENTRY_ID = 'urn:uuid:a9f8cd0c-7e98-5a88-904d-b79e26d15d8a';

describe('renderAtomFeed', () => {
  withJing(`is valid Atom 1.0 (RFC 4287 RELAX NG schema), with text that needs escaping and with no reviews${JING_NOTE}`, async () => {
    const full = writeFeed('full.xml', renderAtomFeed(sampleDocument(), URLS));
    const empty = writeFeed('empty.xml', renderAtomFeed(sampleDocument({ reviews: 0, tricky: false }), URLS));
    // Proves the schema bites: a feed without its required <id>.
    const broken = writeFeed('broken.xml', renderAtomFeed(sampleDocument({ reviews: 1 }), URLS).replace(`<id>${FEED_ID}</id>`, ''));
    const errors = await jing([full, empty, broken]);
    expect(errors.filter((line) => !line.startsWith(broken))).toEqual([]);
    expect(errors.some((line) => line.startsWith(broken) && line.includes('"id"'))).toBe(true);
  });

  it('is dated by the dataset when it has no reviews', () => {
    const xml = renderAtomFeed(sampleDocument({ reviews: 0, tricky: false }), URLS);
    expect(xml).toContain('<updated>2025-07-01T12:00:00.000Z</updated>');
    expect(xml).not.toContain('<entry>');
  });

  it('identifies itself and advertises the hub', () => {
    const xml = renderAtomFeed(sampleDocument(), URLS);
    expect(xml.startsWith('<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="en">')).toBe(true);
    expect(xml).toContain(`<id>${FEED_ID}</id>`);
    expect(xml).toContain('<link rel="self" type="application/atom+xml" href="https://reviews.example.com/feed.xml"/>');
    expect(xml).toContain('<link rel="hub" href="https://reviews.example.com/api/websub/hub"/>');
    expect(xml).toContain('<link rel="alternate" type="text/html" href="https://evergreen.example.com"/>');
    // The feed's author is the business, with its website (RFC 4287 §4.2.1, §3.2).
    const doc = sampleDocument();
    expect(xml).toMatch(new RegExp(`\\n  <author>\\n    <name>[^<]+</name>\\n    <uri>${doc.business.url}</uri>\\n  </author>\\n`));
  });

  it(`holds the ${FEED_SIZE} newest reviews, newest first, and is updated when its newest entry was`, () => {
    const doc = sampleDocument({ reviews: 80 });
    const xml = renderAtomFeed(doc, URLS);
    expect(entryLinks(xml)).toEqual(doc.reviews.slice(0, FEED_SIZE).map((review) => review.source_url ?? `${URLS.reviews}#${review.id}`));
    expect(new Set(entryIds(xml)).size).toBe(FEED_SIZE);
    // The tricky review's owner reply (2100-01-02) is the newest change.
    expect(xml).toMatch(/<\/title>\n {2}<subtitle[^\n]*\n {2}<updated>2100-01-02T00:00:00Z<\/updated>/);
  });

  it('escapes markup and drops characters XML cannot carry, keeping the text otherwise intact', () => {
    const xml = renderAtomFeed(sampleDocument(), URLS);
    expect(xml).toContain('<title type="text">★★☆☆☆ 2/5 by Zoë "Z" &lt;O\'Brien&gt; &amp; Sons</title>');
    expect(xml).toContain(
      '<content type="text">Line one &amp; &lt;b&gt;not bold&lt;/b&gt; ]]&gt; "quoted"&#xD;\nLine two\twith a tab, a control char  here, an emoji 🕯️ and a lone surrogate  there.\n\n' +
        'Reply from Evergreen Funeral Home &amp; Crematory (2100-01-02): We are sorry — please call us &lt;any time&gt;.</content>',
    );
    expect(xml).toContain(`<id>${TRICKY_ENTRY_ID}</id>`);
    expect(xml).toContain(`<link rel="alternate" href="https://reviews.example.com/reviews.json#${TRICKY_REVIEW.id}"/>`);
    expect(xml).toContain('<published>2099-12-31T00:00:00Z</published>');
  });

  it('keeps its ids when the service or the business website moves (RFC 4287 §4.2.6): they come from the business id and the reviews', () => {
    const doc = sampleDocument();
    const here = renderAtomFeed(doc, URLS);
    const there = renderAtomFeed(doc, publicUrls('https://elsewhere.example.net:8443/'));
    expect(there).toContain('https://elsewhere.example.net:8443/feed.xml');
    expect(there).toContain(`<id>${FEED_ID}</id>`);
    expect(entryIds(there)).toEqual(entryIds(here));
    expect(entryIds(here)).toContain(TRICKY_ENTRY_ID);
    // A website fixed from http to https, or given a trailing slash, is the same business.
    const relocated = renderAtomFeed({ ...doc, business: { ...doc.business, url: 'https://www.evergreen.example.com/' } }, URLS);
    expect(relocated).toContain(`<id>${FEED_ID}</id>`);
    expect(entryIds(relocated)).toEqual(entryIds(here));
    const otherBusiness = renderAtomFeed({ ...doc, business: { ...doc.business, id: 'another-home' } }, URLS);
    expect(entryIds(otherBusiness).some((id) => entryIds(here).includes(id))).toBe(false);
  });

  it('is byte-stable', () => {
    const doc = sampleDocument();
    expect(renderAtomFeed(structuredClone(doc), URLS)).toBe(renderAtomFeed(doc, URLS));
  });
});
