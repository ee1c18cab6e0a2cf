import { describe, it, expect } from '@jest/globals';
import { decodeUtf8Form } from '../src/form-body.js';

const fields = (body: string | Buffer): Array<[string, string]> => {
  const decoded = decodeUtf8Form(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  if (!decoded.ok) throw new Error(`refused: ${decoded.message}`);
  return [...decoded.form];
};
const refusal = (body: string | Buffer): string => {
  const decoded = decodeUtf8Form(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  if (decoded.ok) throw new Error(`accepted: ${JSON.stringify([...decoded.form])}`);
  return decoded.message;
};

describe('decodeUtf8Form', () => {
  it.each([
    ['hub.mode=subscribe&hub.callback=https%3A%2F%2Fsub.example%2Fcb%3Fa%3D1%26b%3D2'],
    ['a=1&&b=&c&=d&e==f'],
    ['plus=a+b&escaped=a%2Bb&space=a%20b'],
    ['literal=%&short=%4&not-hex=%zz&lower=%e2%9c%93'],
    ['accents=%C3%A9t%C3%A9&raw=été&emoji=%F0%9F%98%80&raw-emoji=😀'],
    ['bom=%EF%BB%BF&%EF%BB%BFname=x'],
    [''],
    ['&&'],
  ])('reads valid UTF-8 exactly as URLSearchParams does: %s', (body) => {
    expect(fields(body)).toEqual([...new URLSearchParams(body)]);
  });

  it.each([
    ['a lone byte', 'hub.callback=https://127.0.0.1:18443/ok%FF', 'hub.callback'],
    ['an overlong encoding of /', 'hub.topic=%C0%AF', 'hub.topic'],
    ['a UTF-16 surrogate', 'hub.secret=%ED%A0%80', 'hub.secret'],
    ['a truncated sequence', 'x=%E2%82', 'x'],
    ['a code point above U+10FFFF', 'a=1&b=%F4%90%80%80', 'b'],
    ['a continuation byte without a lead byte', 'hub.verify_token=ok%80', 'hub.verify_token'],
  ])('refuses %s instead of decoding it to U+FFFD, naming the field', (_label, body, field) => {
    expect(refusal(body)).toBe(`${field}: is not valid UTF-8 once percent-decoded (W3C WebSub §5.1 requires a UTF-8 form)`);
  });

  it('refuses raw bytes that are not UTF-8, not only escaped ones', () => {
    expect(refusal(Buffer.concat([Buffer.from('hub.mode=subscribe&hub.callback=https://sub.example/'), Buffer.from([0xff])]))).toMatch(/^hub\.callback: /);
  });

  it('names a field name that is not UTF-8 as it was sent, escaping bytes outside printable ASCII', () => {
    expect(refusal('hub.%FFmode=subscribe')).toMatch(/^hub\.%FFmode \(a field name\): is not valid UTF-8/);
    expect(refusal(Buffer.from([0x61, 0xc3, 0x0a, 0x3d, 0x31]))).toMatch(/^a%C3%0A \(a field name\): /);
  });

  it('refuses a body that starts with a raw byte order mark, saying so; an escaped one is data', () => {
    expect(refusal('\uFEFFhub.mode=subscribe')).toBe('The body starts with a UTF-8 byte order mark (EF BB BF); send the form without it.');
    expect(fields('%EF%BB%BFhub.mode=subscribe')).toEqual([['\uFEFFhub.mode', 'subscribe']]);
  });

  it('refuses the whole form when any field is not UTF-8, whatever comes before or after it', () => {
    expect(refusal('hub.mode=subscribe&ignored=%FE&hub.topic=t')).toMatch(/^ignored: /);
  });
});
