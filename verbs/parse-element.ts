/**
 * Reading one element of a verb document once the schema has validated it: its attributes as numbers and
 * booleans, its own text, its URLs (absolute http(s) only), and the list of problems found (parse.ts throws them).
 */
import type { Element } from 'libxmljs2';
import { VerbDocumentError } from './errors.js';
import { MAX_LOOP } from './types.js';

export class Problems {
  readonly list: string[] = [];
  firstLine: number | undefined;
  add(line: number | null | undefined, text: string): void {
    const at = line !== null && line !== undefined && line > 0 ? line : undefined;
    this.firstLine ??= at;
    this.list.push(at === undefined ? text : `line ${at}: ${text}`);
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw new VerbDocumentError(this.list, this.firstLine);
  }
}

export function attr(el: Element, name: string): string | undefined {
  return el.attr(name)?.value();
}

export function intAttr(el: Element, name: string, fallback: number): number {
  const v = attr(el, name);
  return v === undefined ? fallback : Number.parseInt(v.trim(), 10);
}

export function optIntAttr(el: Element, name: string): number | undefined {
  const v = attr(el, name);
  return v === undefined ? undefined : Number.parseInt(v.trim(), 10);
}

/** xs:boolean allows true, false, 1, 0 (with surrounding whitespace). */
export function boolAttr(el: Element, name: string, fallback: boolean): boolean {
  const v = attr(el, name)?.trim();
  return v === undefined ? fallback : v === 'true' || v === '1';
}

/** Text of the element itself (text and CDATA children), not of its child elements. */
export function ownText(el: Element): string {
  let text = '';
  for (const child of el.childNodes()) {
    const t = child.type() as string;
    if (t === 'text' || t === 'cdata') text += (child as unknown as { text(): string }).text();
  }
  return text.trim();
}

/** Spec: webhook URLs are where signed POSTs go, so only absolute http and https URLs make sense. */
export function absoluteHttpUrl(value: string, what: string, line: number, problems: Problems): string | undefined {
  const text = value.trim();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    problems.add(line, `${what} '${text}' is not an absolute URL; expected http:// or https://`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.add(line, `${what} '${text}' uses ${url.protocol.replace(/:$/, '')}; only http and https are allowed`);
    return undefined;
  }
  return text;
}

export function loopOf(el: Element, fallback: number): { loop: number; untilInterrupted: boolean } {
  const loop = intAttr(el, 'loop', fallback);
  return loop === 0 ? { loop: MAX_LOOP, untilInterrupted: true } : { loop, untilInterrupted: false };
}

export function optionalAction(el: Element, line: number, problems: Problems): { action?: string } {
  const raw = attr(el, 'action');
  if (raw === undefined) return {};
  const action = absoluteHttpUrl(raw, `${el.name()} action`, line, problems);
  return action === undefined ? {} : { action };
}
