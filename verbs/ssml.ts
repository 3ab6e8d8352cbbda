/**
 * SSML inside `<Say>` (what the `twilio` library's say.break(), say.emphasis(), say.prosody() ... write), rebuilt
 * as the SSML espeak-ng reads (`-m`). A customer's markup never reaches espeak-ng as written: each element espeak-ng
 * speaks is rebuilt from a known name and checked attribute values, text is escaped again, and every other element
 * (phoneme, w, amazon:effect, audio, a typo) contributes only its text. espeak-ng obeys elements beyond SSML's
 * prosody (audio reads a file, and crashes on one it cannot decode), so none of those may pass.
 */
import type { Element } from 'libxmljs2';

/** Longest SSML a Say may become, in characters (media's MAX_TTS_SSML, which test/verbs keeps equal). */
export const MAX_SAY_SSML_CHARS = 16384;

/** An attribute value espeak-ng reads: a short token of the given shape. */
const TIME = /^\d{1,5}(\.\d{1,3})?(ms|s)$/;
const STRENGTH = /^(none|x-weak|weak|medium|strong|x-strong)$/;
const LEVEL = /^(strong|moderate|none|reduced)$/;
const PROSODY = /^([a-z-]{1,12}|[+-]?\d{1,4}(\.\d{1,2})?(%|hz|st|db)?)$/i;
const TOKEN = /^[A-Za-z][A-Za-z0-9:_-]{0,31}$/;
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$/;

/** Per element espeak-ng is given: its attributes and what a valid value of each looks like. */
const SPOKEN: ReadonlyMap<string, Readonly<Record<string, RegExp>>> = new Map<string, Readonly<Record<string, RegExp>>>(
  [
    ['break', { time: TIME, strength: STRENGTH }],
    ['emphasis', { level: LEVEL }],
    ['prosody', { rate: PROSODY, pitch: PROSODY, volume: PROSODY }],
    ['say-as', { 'interpret-as': TOKEN, format: TOKEN, detail: TOKEN }],
    ['p', {}],
    ['s', {}],
  ],
);

/** Markup-free text for espeak-ng's SSML mode. */
function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeAttribute(value: string): string {
  return escapeText(value).replace(/"/g, '&quot;');
}

function attributeValue(el: Element, name: string, prefix?: string): string | undefined {
  for (const a of el.attrs()) {
    if (a.name() !== name) continue;
    if ((a.namespace()?.prefix() ?? undefined) !== prefix) continue;
    return a.value().trim();
  }
  return undefined;
}

/** The element with the attributes espeak-ng reads and whose values are valid; others are dropped. */
function openTag(name: string, el: Element): string {
  const allowed = SPOKEN.get(name) ?? {};
  let tag = `<${name}`;
  for (const [attribute, shape] of Object.entries(allowed)) {
    const value = attributeValue(el, attribute);
    if (value !== undefined && shape.test(value)) tag += ` ${attribute}="${escapeAttribute(value)}"`;
  }
  return tag;
}

function childrenOf(el: Element): string {
  let out = '';
  for (const child of el.childNodes()) {
    const type = child.type() as string;
    if (type === 'text' || type === 'cdata') out += escapeText((child as unknown as { text(): string }).text());
    else if (type === 'element') out += elementOf(child as Element);
  }
  return out;
}

function elementOf(el: Element): string {
  const name = el.namespace() ? '' : el.name();
  if (name === 'break') return `${openTag(name, el)}/>`;
  if (SPOKEN.has(name)) return `${openTag(name, el)}>${childrenOf(el)}</${name}>`;
  if (name === 'sub') {
    // Spoken as its alias: a substitution espeak-ng makes as text, not by obeying markup.
    const alias = attributeValue(el, 'alias');
    return alias !== undefined && alias !== '' ? ` ${escapeText(alias)} ` : ` ${childrenOf(el)} `;
  }
  if (name === 'lang') {
    // SSML 1.1's lang is espeak-ng's voice with xml:lang (language only: the Say's voice keeps its gender).
    const lang = attributeValue(el, 'lang', 'xml');
    if (lang !== undefined && LANGUAGE_TAG.test(lang)) return `<voice xml:lang="${lang}">${childrenOf(el)}</voice>`;
  }
  // An element's edge is a word's edge, as it would be for espeak-ng's own elements.
  return ` ${childrenOf(el)} `;
}

/** The Say's words as plain text (for its length limit and the logs): each element's text, a word apart. */
export function sayText(say: Element): string {
  const words = (el: Element): string =>
    el
      .childNodes()
      .map((n) => {
        const type = n.type() as string;
        if (type === 'text' || type === 'cdata') return (n as unknown as { text(): string }).text();
        return type === 'element' ? ` ${words(n as Element)} ` : '';
      })
      .join('');
  return words(say).replace(/\s+/g, ' ').trim();
}

/** True when a Say holds markup (child elements) rather than text alone. */
export function hasSsml(say: Element): boolean {
  return say.childNodes().some((n) => n.type() === 'element');
}

/**
 * The Say's content as SSML espeak-ng reads, wrapped in `<speak>`: only break, emphasis, prosody, say-as, p, s and
 * voice (from lang) elements, sub as its alias, every other element as its text.
 */
export function sayToSsml(say: Element): string {
  return `<speak>${childrenOf(say).trim()}</speak>`;
}
