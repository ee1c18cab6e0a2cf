/** Characters XML 1.0 forbids anywhere in a document (control characters, lone surrogates, U+FFFE/U+FFFF). */
const ILLEGAL_XML_CHARS = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

const TEXT_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '\r': '&#xD;' };
// Tab and newline are escaped in attributes because a parser would otherwise normalise them to spaces.
const ATTRIBUTE_ESCAPES: Readonly<Record<string, string>> = { ...TEXT_ESCAPES, '"': '&quot;', "'": '&apos;', '\t': '&#x9;', '\n': '&#xA;' };

/** Character data: illegal characters dropped, markup escaped, `\r` kept as a reference so parsing preserves it. */
function xmlText(value: string): string {
  return value.replace(ILLEGAL_XML_CHARS, '').replace(/[&<>\r]/g, (char) => TEXT_ESCAPES[char] ?? char);
}

/** A quoted attribute value, safe for any string. */
function xmlAttribute(value: string): string {
  return `"${value.replace(ILLEGAL_XML_CHARS, '').replace(/[&<>\r"'\t\n]/g, (char) => ATTRIBUTE_ESCAPES[char] ?? char)}"`;
}

/** An element holding either text or child elements (Atom needs no mixed content). */
export interface XmlElement {
  readonly name: string;
  readonly attributes?: Readonly<Record<string, string>>;
  readonly text?: string;
  readonly children?: readonly XmlElement[];
}

/**
 * Serialises an element tree, one element per line, indented by two spaces. Only the whitespace between
 * elements is added; text content is written exactly as given (escaped), so multi-line text survives.
 */
export function serializeXml(root: XmlElement): string {
  return `<?xml version="1.0" encoding="utf-8"?>\n${serializeElement(root, '')}\n`;
}

function serializeElement(element: XmlElement, indent: string): string {
  const attributes = Object.entries(element.attributes ?? {})
    .map(([key, value]) => ` ${key}=${xmlAttribute(value)}`)
    .join('');
  const open = `${indent}<${element.name}${attributes}`;
  if (element.text !== undefined) return `${open}>${xmlText(element.text)}</${element.name}>`;
  const children = element.children ?? [];
  if (children.length === 0) return `${open}/>`;
  const body = children.map((child) => serializeElement(child, `${indent}  `)).join('\n');
  return `${open}>\n${body}\n${indent}</${element.name}>`;
}
