import { describe, expect, it } from '@jest/globals';
import { NotDatasetJson, parseDatasetJson } from '@reviews/dataset-store/dataset-bytes';

/** The issue parseDatasetJson refuses `bytes` with. */
function refusal(bytes: Uint8Array) {
  try {
    parseDatasetJson(bytes);
  } catch (error) {
    if (error instanceof NotDatasetJson) return error.issue;
    throw error;
  }
  throw new Error('expected the bytes to be refused');
}

/** `{"a":"` + 'é€😀' (2, 3 and 4 bytes, offsets 6-14) + `bad` + `"}`: the bad bytes start at byte 15. */
const around = (bad: number[]) => Buffer.concat([Buffer.from('{"a":"é€😀'), Buffer.from(bad), Buffer.from('"}')]);

describe('parseDatasetJson', () => {
  it('parses UTF-8 JSON, with or without a byte order mark', () => {
    expect(parseDatasetJson(Buffer.from('{"a":"é€😀"}'))).toEqual({ a: 'é€😀' });
    expect(parseDatasetJson(Buffer.from('\uFEFF{"a":"é€😀"}'))).toEqual({ a: 'é€😀' });
  });

  it.each([
    ['a Latin-1 byte', [0xe9, 0x41]],
    ['a lone continuation byte', [0x80]],
    ['an overlong encoding', [0xc0, 0xaf]],
    ['an overlong three-byte form', [0xe0, 0x80, 0xaf]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['a byte UTF-8 never uses', [0xff]],
    ['a sequence cut short', [0xe2, 0x82]],
  ])('refuses %s, naming the byte offset where it starts', (_, bad) => {
    expect(refusal(around(bad))).toEqual({ code: 'invalid_utf8', path: [], message: `not valid UTF-8: malformed byte sequence at byte offset 15 (0x${bad[0]!.toString(16).toUpperCase()}); save the file as UTF-8` });
  });

  it('refuses a sequence cut short by the end of the file', () => {
    expect(refusal(Buffer.from([0x7b, 0xf0, 0x9f, 0x98])).message).toContain('at byte offset 1 (0xF0)');
  });

  it('refuses UTF-8 that is not JSON', () => {
    expect(refusal(Buffer.from('{"a":'))).toEqual({ code: 'invalid_json', path: [], message: expect.stringMatching(/^not valid JSON: /) });
  });

  // JSON.parse keeps the last of two equal names: a publisher's "rating": 5, "rating": 1 was served as 1, silently.
  it.each([
    ['a review field', '{"reviews":[{"id":"a"},{"rating":5,"rating":1}]}', ['reviews', 1, 'rating']],
    ['a name written with an escape', '{"analysis":{"per_review":{"x":{},"\\u0078":{}}}}', ['analysis', 'per_review', 'x']],
    ['a top-level section', '{"business":{},"reviews":[],"business":{}}', ['business']],
    ['after arrays, strings holding quotes, braces and commas', '{"a":[[1,{"k":"\\"},{["}],[]],"b":{"a":1},"c":[{"a":1,"b":2},{"a":1,"a":2}]}', ['c', 1, 'a']],
  ])('refuses a name repeated in one object (%s), naming its path', (_, text, path) => {
    expect(refusal(Buffer.from(text))).toEqual({ code: 'custom', path, message: expect.stringContaining('appears twice') });
  });

  it('takes the same name in different objects, and trusts canonical bytes (JSON.stringify repeats none) without looking', () => {
    expect(parseDatasetJson(Buffer.from('{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}],"x":"{\\"x\\":1,\\"x\\":2}"}'))).toMatchObject({ c: [{ x: 1 }, { x: 2 }] });
    expect(parseDatasetJson(Buffer.from('{"x":1,"x":2}'), { canonical: true })).toEqual({ x: 2 });
  });
});

// A publisher's audit: 250 MB of `[],` (under the 256 MiB cap) took 7.5 GB to refuse, and killed a checker with a 1 GiB heap.
describe('parseDatasetJson: values', () => {
  it('refuses bytes holding more than 10,000,000 values in arrays and objects before parsing them, at the offset the limit was passed', () => {
    // `{"x":[` (2 counted) then 5,000,000 elements `[],` (2 each, the bracket and the comma): the 10,000,001st
    // is the bracket of the element at index 4,999,999, at byte 6 + 3 × 4,999,999.
    const crowded = Buffer.from(`{"x":[${'[],'.repeat(5_000_000)}[]]}`);
    expect(refusal(crowded)).toEqual({
      code: 'invalid_json',
      path: [],
      message: `holds more than 10,000,000 values in its arrays and objects (the limit was passed at byte offset ${6 + 3 * 4_999_999}); no dataset the store takes holds that many (100,000 reviews are about 3.4 million)`,
    });
  });

  it('counts no comma or bracket inside a string, escaped quotes included', () => {
    const text = `"a\\",[{${',['.repeat(100)}"`;
    expect(parseDatasetJson(Buffer.from(`{"k":${JSON.stringify(text.repeat(60_000))},"n":[1,2]}`))).toMatchObject({ n: [1, 2] });
  });
});
