import { readFile } from 'node:fs/promises';

/**
 * A Gather's `hints` as the recogniser's grammar (JSGF). Hints come from the account's verb document: hostile
 * input. They are reduced to lower-case letters, digits and single spaces, bounded in count and length, digits
 * spelled as words, and every word must be in the pronouncing dictionary (pocketsphinx refuses a grammar with an
 * unknown word); what is left can only ever be a list of dictionary words, so nothing in it means anything to
 * the JSGF parser, and it reaches pocketsphinx as a file we write, never through a shell.
 */
export const MAX_HINTS = 50;
export const MAX_HINT_CHARS = 64;
export const MAX_HINT_WORDS = 5;

const DIGIT_WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

/**
 * Words a caller may say that are none of the hints: the grammar's second branch, so that an utterance outside
 * the hints has somewhere else to go and the recogniser's agreement between the two grammars can be measured
 * (recognizer.ts, confidence). Everyday words of varied sounds, none very short (short words match anything).
 */
const OTHER_WORDS =
  'hello okay please thanks good bad right left time day name number call phone money water house car red ' +
  'blue green big small more less maybe later never again help music what how can weather banana account';

/** Lower case, letters/digits/spaces only, digits as words, bounded; empty and duplicate hints dropped. */
export function sanitiseHints(hints: readonly string[], isWord: (w: string) => boolean = () => true): string[] {
  const out: string[] = [];
  for (const raw of hints.slice(0, MAX_HINTS * 4)) {
    if (out.length >= MAX_HINTS) break;
    const words = String(raw)
      .slice(0, MAX_HINT_CHARS)
      .toLowerCase()
      .replace(/[0-9]/g, (d) => ` ${DIGIT_WORDS[Number(d)]} `)
      .replace(/[^a-z ]+/g, ' ')
      .split(' ')
      .filter((w) => w !== '' && isWord(w))
      .slice(0, MAX_HINT_WORDS);
    const hint = words.join(' ');
    if (hint !== '' && !out.includes(hint)) out.push(hint);
  }
  return out;
}

/** The grammar of the hints alone: what the caller said, forced to the closest hint. */
export function hintGrammar(hints: readonly string[]): string {
  return `#JSGF V1.0;\ngrammar hints;\npublic <hint> = ${hints.join(' | ')};\n`;
}

/**
 * The hints beside other everyday words (weighted towards the hints): an utterance that is a hint should still
 * come out as that hint; one that is not usually lands on another word.
 */
export function openGrammar(hints: readonly string[], isWord: (w: string) => boolean = () => true): string {
  const taken = new Set(hints.flatMap((h) => h.split(' ')));
  const other = OTHER_WORDS.split(' ').filter((w) => !taken.has(w) && isWord(w));
  return (
    `#JSGF V1.0;\ngrammar open;\npublic <utterance> = /0.9/ <hint> | /0.1/ <other>;\n` +
    `<hint> = ${hints.join(' | ')};\n<other> = ${other.join(' | ')};\n`
  );
}

/** The pronouncing dictionary's words (loaded once per path). */
const dictionaries = new Map<string, Promise<Set<string>>>();

export function dictionaryWords(path: string): Promise<Set<string>> {
  let words = dictionaries.get(path);
  if (!words) {
    words = readFile(path, 'utf8').then((text) => {
      const set = new Set<string>();
      for (const line of text.split('\n')) {
        const space = line.indexOf(' ');
        // Alternates are spelled word(2); the base word is enough.
        if (space > 0) set.add(line.slice(0, space).replace(/\(\d+\)$/, ''));
      }
      return set;
    });
    words.catch(() => dictionaries.delete(path));
    dictionaries.set(path, words);
  }
  return words;
}
