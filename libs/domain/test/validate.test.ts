import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { issueCount, validateDataset, VisibleText, type DatasetInput, type Issue, type ValidatedBefore } from '@reviews/domain';
import { buildDataset } from './fixtures.js';

/** A fresh valid dataset, changed by `mutate`, then validated; returns the issues. */
function issuesAfter(mutate: (input: DatasetInput) => void): Issue[] {
  const input = structuredClone(buildDataset());
  mutate(input);
  const result = validateDataset(input);
  if (result.ok) throw new Error('expected the dataset to be rejected');
  return result.issues;
}

const firstAnalysed = (input: DatasetInput) => {
  const [id, analysis] = Object.entries(input.analysis.per_review)[0] ?? [];
  if (!id || !analysis) throw new Error('fixture has no analysis');
  return { id, analysis };
};

describe('validateDataset', () => {
  it('accepts the fixture and returns the parsed input', () => {
    const input = buildDataset();
    expect(validateDataset(input)).toEqual({ ok: true, input });
  });

  it('reports schema errors with the path of the offending field', () => {
    const issues = issuesAfter((input) => {
      (input.reviews[1] as { rating: number }).rating = 6;
      (input.reviews[2] as Record<string, unknown>)['stars'] = 5;
    });
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'too_big', path: ['reviews', 1, 'rating'] }),
        { code: 'unrecognized_keys', path: ['reviews', 2, 'stars'], message: 'Unrecognized key: "stars"' },
      ]),
    );
  });

  it('rejects a non-object with an issue at the root', () => {
    const result = validateDataset('not a dataset');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.issues[0]?.path).toEqual([]);
  });

  it('reports each repeated review id at the repeating review', () => {
    const issues = issuesAfter((input) => {
      const first = input.reviews[0];
      if (!first) throw new Error('fixture has no reviews');
      (input.reviews[3] as { id: string }).id = first.id;
      (input.reviews[5] as { id: string }).id = first.id;
    });
    expect(issues.filter((issue) => issue.message.startsWith('duplicate review id'))).toEqual([
      expect.objectContaining({ code: 'custom', path: ['reviews', 3, 'id'] }),
      expect.objectContaining({ code: 'custom', path: ['reviews', 5, 'id'] }),
    ]);
  });

  it('rejects per_review entries for reviews that do not exist', () => {
    const ghost = '01J00000000000000000000000';
    const issues = issuesAfter((input) => {
      input.analysis.per_review[ghost] = firstAnalysed(input).analysis;
    });
    expect(issues).toEqual([expect.objectContaining({ code: 'custom', path: ['analysis', 'per_review', ghost] })]);
  });

  it('requires canonical staff names, known service ids, and problems and topics from the taxonomy', () => {
    let id = '';
    const issues = issuesAfter((input) => {
      const analysed = firstAnalysed(input);
      id = analysed.id;
      Object.assign(analysed.analysis, {
        technicians: ['Margaret Ellis', 'Maggie'], // an alias is not the canonical name
        services: ['direct-cremation', 'embalming'],
        problems: ['long-wait', 'lost-urn'],
        topics: ['cost'],
      });
    });
    const base = ['analysis', 'per_review', id];
    expect(issues).toEqual([
      expect.objectContaining({ code: 'custom', path: [...base, 'technicians', 1], message: expect.stringContaining('"Maggie"') }),
      expect.objectContaining({ code: 'custom', path: [...base, 'services', 1], message: expect.stringContaining('"embalming"') }),
      expect.objectContaining({ code: 'custom', path: [...base, 'problems', 1], message: expect.stringContaining('"lost-urn"') }),
      expect.objectContaining({ code: 'custom', path: [...base, 'topics', 0], message: expect.stringContaining('"cost"') }),
    ]);
  });

  it('rejects an aspect mentioned twice in one review', () => {
    let id = '';
    const issues = issuesAfter((input) => {
      const analysed = firstAnalysed(input);
      id = analysed.id;
      analysed.analysis.aspects = [
        { id: 'pricing', sentiment: 'positive', phrase: null },
        { id: 'pricing', sentiment: 'negative', phrase: null },
      ];
    });
    expect(issues).toEqual([expect.objectContaining({ code: 'custom', path: ['analysis', 'per_review', id, 'aspects', 1, 'id'] })]);
  });

  it('requires FAQ sources to be reviews of the dataset', () => {
    const issues = issuesAfter((input) => {
      (input.analysis.faq[0] as { source_review_ids: string[] }).source_review_ids.push('01J99999999999999999999999');
    });
    expect(issues).toEqual([expect.objectContaining({ code: 'custom', path: ['analysis', 'faq', 0, 'source_review_ids', 2] })]);
  });

  it('rejects an owner reply dated before its review, and accepts one on the same day', () => {
    expect(validateDataset(buildDataset()).ok).toBe(true); // review 0 has a same-day reply
    const issues = issuesAfter((input) => {
      const review = input.reviews[0];
      if (!review?.owner_reply) throw new Error('fixture review 0 has a reply');
      review.owner_reply.date = '2023-12-31';
    });
    expect(issues).toEqual([expect.objectContaining({ code: 'custom', path: ['reviews', 0, 'owner_reply', 'date'] })]);
  });

  it('rejects a review or owner reply dated after the day the dataset was generated, and accepts that day itself', () => {
    // 00:30 at UTC+02:00 is still the day before in UTC: the day as written counts, as review dates carry no offset.
    const generatedAt = '2025-07-01T00:30:00+02:00';
    const sameDay = structuredClone(buildDataset());
    sameDay.generated_at = generatedAt;
    sameDay.reviews[1]!.date = '2025-07-01';
    sameDay.reviews[1]!.owner_reply = { text: 'Thank you.', date: '2025-07-01' };
    expect(validateDataset(sameDay).ok).toBe(true);

    const issues = issuesAfter((input) => {
      input.generated_at = generatedAt;
      input.reviews[1]!.date = '2025-07-02';
      input.reviews[2]!.owner_reply = { text: 'Thank you.', date: '2025-07-02' };
    });
    expect(issues).toEqual([
      expect.objectContaining({ code: 'custom', path: ['reviews', 1, 'date'], message: `review dated 2025-07-02, after the dataset was generated (generated_at ${generatedAt})` }),
      expect.objectContaining({ code: 'custom', path: ['reviews', 2, 'owner_reply', 'date'], message: expect.stringContaining('owner reply dated 2025-07-02, after') }),
    ]);
  });

  it('rejects ambiguous business references: repeated service ids or labels, a name or alias naming two people', () => {
    const issues = issuesAfter((input) => {
      input.business.services.push({ id: 'direct-cremation', label: 'DIRECT CREMATION' });
      input.business.technicians.push({ name: 'Dan', role: 'Driver', aliases: [] });
    });
    expect(issues).toEqual([
      expect.objectContaining({ code: 'custom', path: ['business', 'services', 3, 'id'] }),
      expect.objectContaining({ code: 'custom', path: ['business', 'services', 3, 'label'] }),
      expect.objectContaining({ code: 'custom', path: ['business', 'technicians', 3] }),
    ]);
  });

  it('counts names that differ only in how an accent is encoded as one name, as search looks them up', () => {
    const issues = issuesAfter((input) => {
      input.business.services.push({ id: 'velorio', label: 'Velório' }, { id: 'velorio-en-capilla', label: 'Velo\u0301rio' });
      input.business.technicians.push({ name: 'José Núñez', role: 'Driver', aliases: [] }, { name: 'Jose\u0301 Nu\u0301n\u0303ez', role: 'Driver', aliases: [] });
    });
    expect(issues).toEqual([
      expect.objectContaining({ code: 'custom', path: ['business', 'services', 4, 'label'] }),
      expect.objectContaining({ code: 'custom', path: ['business', 'technicians', 4] }),
    ]);
  });

  // A publisher's audit: a label that was another service's id made search and get_service answer for the wrong one.
  it('rejects a service label that is another service\'s id, or an id that is another\'s label, and accepts a label spelling its own id', () => {
    const issues = issuesAfter((input) => {
      const [first, second] = input.business.services;
      if (!first || !second) throw new Error('fixture has too few services');
      first.label = second.id.toUpperCase();
      input.business.services.push({ id: 'funeral-home-tour', label: 'Funeral-Home-Tour' });
    });
    expect(issues).toEqual([expect.objectContaining({ code: 'custom', path: ['business', 'services', 1, 'id'], message: expect.stringContaining('already names another service') })]);
  });

  it('rejects a dataset generated outside the years 0000 to 9999 in UTC, which RFC 3339 cannot write', () => {
    for (const generatedAt of ['0000-01-01T00:00:00+01:00', '9999-12-31T23:30:00-01:00']) {
      const issues = issuesAfter((input) => {
        input.generated_at = generatedAt;
      });
      expect(issues).toContainEqual(expect.objectContaining({ path: ['generated_at'], message: 'must fall between 0000-01-01 and 9999-12-31 in UTC' }));
    }
  });

  // A publisher's audit: 6,000 levels of brackets under an unknown key crashed the checker (stack overflow).
  it('reports nesting beyond 64 levels at its path, however deep it goes', () => {
    const deep: unknown[] = [];
    let inner = deep;
    for (let level = 1; level < 100_000; level++) {
      const next: unknown[] = [];
      inner.push(next);
      inner = next;
    }
    const issues = issuesAfter((input) => {
      (input as unknown as Record<string, unknown>).x = deep;
    });
    expect(issues).toContainEqual(expect.objectContaining({ code: 'custom', path: ['x', ...Array<number>(63).fill(0)], message: 'nests arrays and objects more than 64 levels deep; no dataset field does' }));
  });

  // A publisher's audit: a field left out read "expected object, received undefined", which JSON cannot hold.
  it('says a field left out is missing', () => {
    const issues = issuesAfter((input) => {
      delete (input.business as unknown as Record<string, unknown>).name;
    });
    expect(issues).toContainEqual({ code: 'invalid_type', path: ['business', 'name'], message: 'missing: a required field (expected string)' });
  });

  describe('a dataset with more wrong values than anyone reads', () => {
    const STOPPED = { code: 'custom', path: [], message: 'more than 1,000 issues: validation stopped after the first 1,000; fix these and check again' };

    // A broken pipeline's file: millions of wrong values took gigabytes to list, one issue each.
    it('lists the first 1,000 issues of a million wrong reviews, says it stopped, and allocates little for it', () => {
      const raw = { ...buildDataset({ reviews: 2, seed: 7 }), reviews: new Array<number>(1_000_000).fill(0) };
      const heapBefore = process.memoryUsage().heapUsed;
      const result = validateDataset(raw);
      const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
      if (result.ok) throw new Error('expected a refusal');
      expect(result.issues).toHaveLength(1_001);
      expect(result.issues[0]).toEqual({ code: 'invalid_type', path: ['reviews', 0], message: 'Invalid input: expected object, received number' });
      expect(result.issues[999]).toEqual(expect.objectContaining({ path: ['reviews', 999] }));
      expect(result.issues[1_000]).toEqual(STOPPED);
      expect(issueCount(result.issues)).toBe('more than 1,000 issues');
      expect(issueCount(result.issues.slice(0, 1_000))).toBe('1,000 issues');
      expect(issueCount(result.issues.slice(0, 1))).toBe('1 issue');
      // A listing of every one held about 1 KB per value: 1 GB here.
      expect(heapGrowth).toBeLessThan(100 * 1024 * 1024);
    });

    it('stops at 1,000 in per_review entries too', () => {
      const input = buildDataset({ reviews: 2, seed: 7 });
      const perReview = Object.fromEntries(Array.from({ length: 1_500 }, (_, i) => [`01ARZ3NDEKTSV4RRFFQ69G${String(i).padStart(4, '0')}`, {}]));
      const result = validateDataset({ ...input, analysis: { ...input.analysis, per_review: perReview } });
      if (result.ok) throw new Error('expected a refusal');
      expect(result.issues).toHaveLength(1_001);
      expect(result.issues.at(-1)).toEqual(STOPPED);
    });

    it('stops listing characters no feed can hold at 1,000 too', () => {
      const issues = issuesAfter((input) => {
        (input as unknown as Record<string, unknown>).x = Array.from({ length: 40 }, () => new Array<string>(5_000).fill('\u0001'));
      });
      expect(issues).toHaveLength(1_001);
      expect(issues.at(-1)).toEqual(STOPPED);
    });

    // A review of the cap: the same zeros nested in one item, or in a list no item walk reaches, still took gigabytes.
    it.each<[string, (input: DatasetInput) => { holder: Record<string, unknown>; path: Issue['path'] }]>([
      ['a review analysis', (input) => ({ holder: firstAnalysed(input).analysis as unknown as Record<string, unknown>, path: ['analysis', 'per_review', firstAnalysed(input).id] })],
      ['the business', (input) => ({ holder: input.business as unknown as Record<string, unknown>, path: ['business'] })],
    ])('refuses a list of millions in %s with one issue naming it, allocating little', (_where, place) => {
      const input = structuredClone(buildDataset());
      const { holder, path } = place(input);
      const field = 'service_areas';
      holder[field] = new Array<number>(2_000_000).fill(0);
      const heapBefore = process.memoryUsage().heapUsed;
      const result = validateDataset(input);
      const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
      if (result.ok) throw new Error('expected a refusal');
      expect(result.issues).toEqual([{ code: 'custom', path: [...path, field], message: 'holds 2,000,000 items; no list but reviews and analysis.per_review may hold more than 10,000' }]);
      expect(heapGrowth).toBeLessThan(100 * 1024 * 1024);
    });

    it('refuses a list over 10,000 items even when every item is valid, and takes one of 10,000', () => {
      const input = structuredClone(buildDataset());
      input.business.service_areas = Array.from({ length: 10_001 }, (_, i) => `Area ${i}`);
      const refused = validateDataset(input);
      expect(refused.ok ? [] : refused.issues).toEqual([expect.objectContaining({ path: ['business', 'service_areas'], message: expect.stringMatching(/^holds 10,001 items/) })]);
      input.business.service_areas.pop();
      expect(validateDataset(input).ok).toBe(true);
    });

    it('lists every issue of a dataset with 1,000 or fewer', () => {
      const raw = { ...buildDataset({ reviews: 2, seed: 7 }), reviews: new Array<number>(1_000).fill(0) };
      const result = validateDataset(raw);
      if (result.ok) throw new Error('expected a refusal');
      expect(result.issues).toHaveLength(1_000);
      expect(result.issues).not.toContainEqual(STOPPED);
    });
  });

  // Each rule below was loosened by a mutation audit without a test failing.
  it.each<[string, (input: DatasetInput) => void, Issue['path']]>([
    ['a rating of 4.5 (ratings are whole stars)', (input) => void (input.reviews[0]!.rating = 4.5), ['reviews', 0, 'rating']],
    ['an FAQ answer citing no review', (input) => void (input.analysis.faq[0]!.source_review_ids = []), ['analysis', 'faq', 0, 'source_review_ids']],
    ['a business with no service', (input) => void (input.business.services = []), ['business', 'services']],
    ['an opening time of 24:30', (input) => void (input.business.hours[0]!.closes = '24:30'), ['business', 'hours', 0, 'closes']],
    ['a three-letter country code', (input) => void (input.business.address.country = 'USA'), ['business', 'address', 'country']],
    ['a URL holding a backtick', (input) => void (input.business.url = 'https://example.com/a`b'), ['business', 'url']],
  ])('refuses %s', (_label, mutate, path) => {
    // Removing every service also leaves the analyses' service references unknown.
    expect(issuesAfter(mutate)).toContainEqual(expect.objectContaining({ path }));
  });

  // A publisher's audit: each feed repeats the name in every entry with an owner reply.
  it('rejects a business name over 200 characters', () => {
    const issues = issuesAfter((input) => {
      input.business.name = 'N'.repeat(201);
    });
    expect(issues).toEqual([expect.objectContaining({ path: ['business', 'name'], code: 'too_big' })]);
    const longest = structuredClone(buildDataset());
    longest.business.name = 'N'.repeat(200);
    expect(validateDataset(longest).ok).toBe(true);
  });

  it('rejects repeated taxonomy ids', () => {
    const issues = issuesAfter((input) => {
      input.analysis.taxonomy.topics.push({ id: 'pets', label: 'Pets again' });
      input.analysis.taxonomy.problems.push({ id: 'long-wait', label: 'Waiting' });
    });
    expect(issues.map((issue) => issue.path)).toEqual([
      ['analysis', 'taxonomy', 'problems', 1, 'id'],
      ['analysis', 'taxonomy', 'topics', 2, 'id'],
    ]);
  });

  it('rejects text with an unpaired UTF-16 surrogate at its exact path, but accepts paired ones (emoji)', () => {
    const issues = issuesAfter((input) => {
      const [first, second, third] = input.reviews;
      if (!first || !second || !third) throw new Error('fixture has too few reviews');
      (first as { text: string | null }).text = 'Kind staff \u{1F64F} throughout';
      (second as { text: string | null }).text = 'Broken \uD83D emoji';
      (third as { author: string }).author = 'Trailing low \uDE4F';
      input.analysis.faq.push({ question: 'Q\uD800?', answer: 'A', source_review_ids: [first.id] });
    });
    expect(issues).toEqual([
      expect.objectContaining({ code: 'custom', path: ['reviews', 1, 'text'], message: expect.stringContaining('unpaired UTF-16 surrogate (U+D83D at index 7)') }),
      expect.objectContaining({ code: 'custom', path: ['reviews', 2, 'author'], message: expect.stringContaining('U+DE4F') }),
      expect.objectContaining({ code: 'custom', path: ['analysis', 'faq', expect.any(Number), 'question'] }),
    ]);
  });

  // XML cannot hold them: the Atom feed dropped them while the JSON kept them, and an author of controls alone was an empty name.
  it('rejects control characters but tab, line feed and carriage return, and U+FFFE/U+FFFF, in any string, at their exact path', () => {
    const issues = issuesAfter((input) => {
      const [first, second, third, fourth] = input.reviews;
      if (!first || !second || !third || !fourth) throw new Error('fixture has too few reviews');
      (first as { text: string | null }).text = 'Tabs\tand\r\nline breaks are fine';
      (second as { author: string }).author = 'Bell\u0007';
      (third as { text: string | null }).text = 'Null \u0000 here';
      (fourth as { text: string | null }).text = 'Reversed BOM \uFFFE';
      input.business.description = 'Escape \u001B[31m';
      (input.reviews[4] as { text: string | null }).text = 'Pasted\u000Bline';
    });
    expect(issues).toEqual([
      expect.objectContaining({ path: ['business', 'description'], message: 'contains a control character (U+001B at index 7) that XML, and so the Atom feed, cannot hold; only tab, line feed and carriage return may appear' }),
      expect.objectContaining({ path: ['reviews', 1, 'author'], message: expect.stringContaining('control character (U+0007 at index 4)') }),
      expect.objectContaining({ path: ['reviews', 2, 'text'], message: expect.stringContaining('control character (U+0000 at index 5)') }),
      expect.objectContaining({ path: ['reviews', 3, 'text'], message: 'contains a noncharacter (U+FFFE at index 13) that XML, and so the Atom feed, cannot hold' }),
      expect.objectContaining({ path: ['reviews', 4, 'text'], message: 'contains a vertical tab (U+000B at index 6) that XML, and so the Atom feed, cannot hold; pasted from a word processor or a PDF, it stands for a line break: write \\n' }),
    ]);
  });

  // A publisher's audit: U+0092 for ’ (Windows-1252 read as Latin-1) and DEL passed, and both feeds served them.
  it('rejects DEL and the C1 controls in any string, saying what a C1 control usually is, and takes the characters after them', () => {
    const issues = issuesAfter((input) => {
      const [first, second, third] = input.reviews;
      if (!first || !second || !third) throw new Error('fixture has too few reviews');
      (first as { text: string | null }).text = 'it\u0092s great';
      (second as { author: string }).author = 'Ann\u007F';
      (third as { text: string | null }).text = 'No-break\u00A0space, café, naïve: all fine';
      input.business.description = '\u009Fend';
    });
    expect(issues).toEqual([
      expect.objectContaining({ path: ['business', 'description'], message: expect.stringContaining('C1 control character (U+009F at index 0)') }),
      expect.objectContaining({ path: ['reviews', 0, 'text'], message: expect.stringMatching(/^contains a C1 control character \(U\+0092 at index 2\).*U\+0092 for ’.*decode it as Windows-1252$/) }),
      expect.objectContaining({ path: ['reviews', 1, 'author'], message: 'contains a delete control character (U+007F at index 3), which feed readers and browsers show as nothing or a box' }),
    ]);
  });

  it('rejects an author, a review text, a reply or a business name with nothing visible (null marks a rating-only review)', () => {
    const issues = issuesAfter((input) => {
      const [first, second, third] = input.reviews;
      if (!first || !second || !third) throw new Error('fixture has too few reviews');
      (first as { author: string }).author = '   ';
      (second as { text: string | null }).text = '\n\t';
      (third as { owner_reply: unknown }).owner_reply = { text: '\u3000', date: third.date };
      input.business.name = ' ';
      // Invisible too: U+0085 (white space to Python, not to JavaScript), a zero-width space, a Hangul filler.
      for (const [index, author] of [[3, '\u0085'], [4, '\u200B\u00AD'], [5, '\u3164 ']] as const) (input.reviews[index] as { author: string }).author = author;
    });
    const blank = 'must contain a visible character, not only white space, control, format or filler characters';
    expect(issues).toEqual([
      expect.objectContaining({ path: ['business', 'name'], message: blank }),
      expect.objectContaining({ path: ['reviews', 0, 'author'], message: blank }),
      expect.objectContaining({ path: ['reviews', 1, 'text'], message: `${blank}; a rating-only review has "text": null` }),
      expect.objectContaining({ path: ['reviews', 2, 'owner_reply', 'text'], message: `${blank}; a review without a reply has "owner_reply": null` }),
      expect.objectContaining({ path: ['reviews', 3, 'author'], message: blank }),
      expect.objectContaining({ path: ['reviews', 4, 'author'], message: blank }),
      expect.objectContaining({ path: ['reviews', 5, 'author'], message: blank }),
      // A C1 control too, refused wherever it appears (the test before).
      expect.objectContaining({ path: ['reviews', 3, 'author'], message: expect.stringContaining('C1 control character (U+0085 at index 0)') }),
    ]);
  });

  // The Python MCP SDK compiles every outputSchema pattern with `re`, which has no property escapes (\\p{Cf}).
  it("publishes that rule as a JSON Schema pattern without property escapes, which read without Unicode mode accepts every character of the BMP as VisibleText does", () => {
    const pattern = (z.toJSONSchema(VisibleText) as { pattern: string }).pattern;
    expect(pattern).not.toMatch(/\\[pP]\{/);
    const portable = new RegExp(pattern);
    const disagreeing: string[] = [];
    for (let code = 0; code <= 0xffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const text = String.fromCharCode(code);
      if (portable.test(text) !== VisibleText.safeParse(text).success) disagreeing.push(code.toString(16));
    }
    expect(disagreeing).toEqual([]);
    expect(portable.test('Ada')).toBe(true);
  });

  // Issues reach the CLI, the logs and every /readyz answer: a 5 MB unknown key made /readyz 10 MB.
  it('names a huge unknown key or value by its first 150 and last 50 characters and a count of the rest', () => {
    const huge = `x${'\u{1F64F}'.repeat(2_500_000)}`;
    const issues = issuesAfter((input) => {
      (input.reviews[0] as Record<string, unknown>)[huge] = 1;
      firstAnalysed(input).analysis.technicians = [huge];
    });
    const sizes = issues.map((issue) => JSON.stringify(issue).length);
    expect(Math.max(...sizes)).toBeLessThan(600);
    const [key] = issues.find((issue) => issue.code === 'unrecognized_keys')!.path.slice(-1) as [string];
    expect(key).toBe(`x${'\u{1F64F}'.repeat(74)}…(${huge.length - 149 - 50} characters left out)…${'\u{1F64F}'.repeat(25)}`);
    expect(issues.find((issue) => issue.path.includes('technicians'))?.message).toMatch(/^unknown staff name .*"x\u{1F64F}+…\(\d+ characters left out\)…\u{1F64F}+"$/u);
  });

  // A publisher's audit: "Invalid URL" and "Invalid ISO datetime" said nothing of what to write instead, and hours of 25:99 passed.
  it('says what a URL, a timestamp and an opening time must be, each alone at its path', () => {
    const issues = issuesAfter((input) => {
      (input.reviews[0] as { source_url: string }).source_url = 'javascript:alert(1)';
      (input.reviews[1] as { author_avatar_url: string }).author_avatar_url = 'www.example.com/a.png';
      input.generated_at = '2026-11-01T06:00:00';
      const [first] = input.business.hours;
      if (!first) throw new Error('fixture has no hours');
      first.opens = '25:99';
      first.closes = '24:00';
    });
    expect(issues).toEqual([
      expect.objectContaining({ path: ['generated_at'], message: expect.stringMatching(/^must be an RFC 3339 timestamp with its offset from UTC/) }),
      expect.objectContaining({ path: ['business', 'hours', 0, 'opens'], message: 'must be a time of day, HH:MM from 00:00 to 23:59 (or 24:00 for the end of the day)' }),
      expect.objectContaining({ path: ['reviews', 0, 'source_url'], message: expect.stringMatching(/^must be an absolute http or https URL/) }),
      expect.objectContaining({ path: ['reviews', 1, 'author_avatar_url'], message: expect.stringMatching(/^must be an absolute http or https URL/) }),
    ]);
  });

  it('rejects a source URL that is not a valid URI, which feeds would carry as given', () => {
    // A right-to-left override (RFC 3987 §4.1 forbids bidirectional formatting characters) and
    // noncharacters, which XML cannot hold: the Atom feed dropped them while the JSON Feed kept them.
    for (const bad of ['https://x.example/a%zz', 'https://x.example/a[1]', 'https://x.example/a#b#c', 'https://x.example/caf\u00e9%2', 'https://x.example/a?b=1&c=<2>', 'https://x.example/a b', 'https://x.example/"q"', 'https://x.example/\u0007', 'https://evil.example/\u202efdp.exe', 'https://x.example/\u200f', 'https://exämple.com/\ufffe', 'https://x.example/\u{1fffe}', 'https://x.example/\ufdd0']) {
      const issues = issuesAfter((input) => {
        (input.reviews[0] as { source_url: string }).source_url = bad;
      });
      expect(issues).toContainEqual(expect.objectContaining({ path: ['reviews', 0, 'source_url'], message: expect.stringContaining('valid URI') }));
      expect(issues.filter((issue) => issue.path.join('/') !== 'reviews/0/source_url')).toEqual([]);
    }
    const input = structuredClone(buildDataset());
    (input.reviews[0] as { source_url: string }).source_url = 'https://x.example/caf%C3%A9?b=1&c=%3C2%3E#r-1';
    (input.reviews[1] as { source_url: string }).source_url = 'https://x.example/café';
    (input.reviews[2] as { source_url: string }).source_url = 'https://x.example/\u0639\u0631\u0628\u064a/\u{1f600}';
    expect(validateDataset(input).ok).toBe(true);
  });

  // A feed audit: an IRI served as written failed `format: uri` in the JSON Feed's schema, and the MCP SDK's client refused the tool result holding it.
  it('serves an IRI as the URI it maps to (RFC 3987 §3.1) and an ASCII URL as written', () => {
    const input = structuredClone(buildDataset());
    input.business.url = 'https://例え.example';
    (input.reviews[0] as { source_url: string }).source_url = "https://x.example/レビュー?q=ü&x='1'#ü";
    (input.reviews[1] as { author_avatar_url: string }).author_avatar_url = 'https://B\u00fccher.example:443/a.png';
    (input.reviews[2] as { source_url: string }).source_url = 'https://X.example:443/a?b#c';
    const result = validateDataset(input);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.input.business.url).toBe('https://xn--r8jz45g.example/');
    expect(result.input.reviews[0]?.source_url).toBe("https://x.example/%E3%83%AC%E3%83%93%E3%83%A5%E3%83%BC?q=%C3%BC&x=%271%27#%C3%BC");
    expect(result.input.reviews[1]?.author_avatar_url).toBe('https://xn--bcher-kva.example/a.png');
    expect(result.input.reviews[2]?.source_url).toBe('https://X.example:443/a?b#c');
  });

  it('returns every integrity issue at once, not only the first', () => {
    const issues = issuesAfter((input) => {
      (input.reviews[6] as { id: string }).id = (input.reviews[0] as { id: string }).id; // review 6 has no analysis
      (input.analysis.faq[0] as { source_review_ids: string[] }).source_review_ids = ['01J99999999999999999999999'];
      firstAnalysed(input).analysis.services = ['embalming'];
    });
    expect(issues).toHaveLength(3);
    expect(issues.every((issue) => issue.code === 'custom' && issue.message.length > 0)).toBe(true);
  });

  it('reports integrity issues in the same round as schema issues, counting the id of a review the schema refuses', () => {
    let analysedId = '';
    const issues = issuesAfter((input) => {
      const [first] = input.reviews;
      if (!first) throw new Error('fixture has no reviews');
      (first as { rating: number }).rating = 9;
      (input.reviews[6] as { id: string }).id = first.id; // review 6 has no analysis
      const analysed = firstAnalysed(input);
      analysedId = analysed.id;
      analysed.analysis.technicians = ['Rosa Delgado', 'Nobody Here'];
    });
    expect(issues).toEqual([
      expect.objectContaining({ code: 'too_big', path: ['reviews', 0, 'rating'] }),
      expect.objectContaining({ code: 'custom', path: ['reviews', 6, 'id'], message: expect.stringContaining('duplicate review id') }),
      expect.objectContaining({ code: 'custom', path: ['analysis', 'per_review', analysedId, 'technicians', 1], message: expect.stringContaining('"Nobody Here"') }),
    ]);
  });

  it('reports no reference as unknown when what it may name was refused by the schema', () => {
    let analysedIndex = -1;
    const issues = issuesAfter((input) => {
      const analysed = firstAnalysed(input);
      Object.assign(analysed.analysis, { technicians: ['Margaret Ellis'], services: ['direct-cremation'], problems: ['long-wait'], topics: ['veterans'] });
      (input.analysis.faq[0] as { source_review_ids: string[] }).source_review_ids = [analysed.id];
      analysedIndex = input.reviews.findIndex((review) => review.id === analysed.id);
      (input.reviews[analysedIndex] as { id: unknown }).id = 42; // neither its per_review entry nor the FAQ names an unknown review
      (input.business.technicians[0] as { role: string }).role = '';
      (input.business.services[0] as { label: string }).label = '';
      delete (input.analysis.taxonomy.problems[0] as { label?: string }).label;
      (input.analysis.taxonomy as { topics: unknown }).topics = 'veterans';
    });
    expect(issues.map((issue) => [issue.code, issue.path])).toEqual([
      ['too_small', ['business', 'services', 0, 'label']],
      ['too_small', ['business', 'technicians', 0, 'role']],
      ['invalid_type', ['reviews', analysedIndex, 'id']],
      ['invalid_type', ['analysis', 'taxonomy', 'topics']],
      ['invalid_type', ['analysis', 'taxonomy', 'problems', 0, 'label']],
    ]);
  });

  it('checks what did parse around a part that did not: the other reviews, the other analyses', () => {
    let analysedId = '';
    const issues = issuesAfter((input) => {
      const [first, second] = Object.keys(input.analysis.per_review);
      analysedId = second!;
      (input.analysis.per_review[first!] as { sentiment: string }).sentiment = 'ecstatic';
      input.analysis.per_review[second!]!.services = ['embalming'];
      (input.reviews[1] as { owner_reply: unknown }).owner_reply = { text: 'Thanks', date: '2020-01-01' };
    });
    expect(issues.map((issue) => [issue.code, issue.path])).toEqual([
      ['invalid_value', ['analysis', 'per_review', expect.any(String), 'sentiment']],
      ['custom', ['reviews', 1, 'owner_reply', 'date']],
      ['custom', ['analysis', 'per_review', analysedId, 'services', 0]],
    ]);
  });
});

describe('validateDataset given the dataset validated before', () => {
  /** A dataset as a build reads it (parsed JSON) and what validating it gave. */
  const parsedFrom = (input: DatasetInput) => JSON.parse(JSON.stringify(input)) as DatasetInput;
  const validatedBefore = (raw: DatasetInput): ValidatedBefore => {
    const result = validateDataset(raw);
    if (!result.ok) throw new Error('the fixture is invalid');
    return { rawReviews: raw.reviews, rawPerReview: raw.analysis.per_review, input: result.input };
  };

  it('gives what a full validation gives, reusing the schema output of what did not change', () => {
    const first = parsedFrom(buildDataset({ reviews: 30, seed: 3 }));
    const before = validatedBefore(first);
    const next = parsedFrom(first);
    next.reviews[4]!.text = 'Edited after publication.';
    const [changedId] = Object.keys(next.analysis.per_review);
    next.analysis.per_review[changedId!]!.score = 0.25;
    next.reviews.push({ ...next.reviews[0]!, id: '01J0000000000000000000ZZZZ' });

    const reused = validateDataset(next, before);
    expect(reused).toEqual(validateDataset(parsedFrom(next)));
    if (!reused.ok) throw new Error('expected the edit to validate');
    expect(reused.input.reviews[3]).toBe(before.input.reviews[3]);
    expect(reused.input.reviews[4]).not.toBe(before.input.reviews[4]);
    expect(reused.input.reviews[4]!.text).toBe('Edited after publication.');
    expect(reused.input.analysis.per_review[changedId!]).not.toBe(before.input.analysis.per_review[changedId!]);
    const [, unchangedId] = Object.keys(next.analysis.per_review);
    expect(reused.input.analysis.per_review[unchangedId!]).toBe(before.input.analysis.per_review[unchangedId!]);
  });

  it('reports exactly the issues a full validation reports when a changed part is invalid', () => {
    const first = parsedFrom(buildDataset({ reviews: 12, seed: 4 }));
    const before = validatedBefore(first);
    const next = parsedFrom(first);
    (next.reviews[2] as { rating: number }).rating = 9;
    (next.analysis.per_review[next.reviews[5]!.id] as Record<string, unknown>)['extra'] = true;
    (next as Record<string, unknown>)['unexpected'] = 1;
    const full = validateDataset(parsedFrom(next));
    expect(full.ok).toBe(false);
    expect(validateDataset(next, before)).toEqual(full);
  });

  it('checks references across reused parts: a duplicated review id is still found', () => {
    const first = parsedFrom(buildDataset({ reviews: 12, seed: 5 }));
    const before = validatedBefore(first);
    const next = parsedFrom(first);
    next.reviews.push(parsedFrom(first).reviews[0]!);
    expect(validateDataset(next, before)).toEqual(validateDataset(parsedFrom(next)));
    expect(validateDataset(next, before).ok).toBe(false);
  });
});
