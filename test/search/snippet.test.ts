// A hit's snippet and its marks (src/search/query.ts snippetOf): the marks come from the same
// tokens the index matched on (split on anything but letters and digits, case and diacritics
// folded), mapped back to the text as written, so whatever matched is marked; the window is
// around the first match and never splits a character.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { snippetOf, termsOf } from "../../src/search/query.ts";

/** The marked pieces of `text`'s snippet for `query`, as the CLI shows them. */
function marked(text: string, query: string): string[] {
  const terms = termsOf(query);
  assert.ok(terms, `"${query}" holds a word`);
  const { snippet, matches } = snippetOf(text, terms);
  for (const [a, b] of matches) {
    assert.ok(0 <= a && a < b && b <= snippet.length, `a mark inside the snippet: ${a}-${b}`);
  }
  return matches.map(([a, b]) => snippet.slice(a, b));
}

describe("search snippet marks", () => {
  it("marks a phrase across a hyphen, and a hyphenated phrase across a space", () => {
    assert.deepEqual(marked("Added an empty-input guard to the parser.", '"empty input"'), [
      "empty-input",
    ]);
    assert.deepEqual(marked("Added an empty input guard.", '"empty-input"'), ["empty input"]);
    assert.deepEqual(marked("Added an empty input guard.", "empty-input"), ["empty input"]);
    // Unquoted words are separate terms: each is marked where it is.
    assert.deepEqual(marked("input first, then empty", "empty input"), ["input", "empty"]);
  });

  it("marks a phrase only where its words are adjacent", () => {
    assert.deepEqual(marked("empty cup, input box; an empty input", '"empty input"'), [
      "empty input",
    ]);
  });

  it("folds diacritics both ways: typed with them, and written with them", () => {
    assert.deepEqual(marked("The tokenizer splits words.", "tokenizér"), ["tokenizer"]);
    assert.deepEqual(marked("Le tokenizér coupe les mots.", "tokenizer"), ["tokenizér"]);
    // Written decomposed (e + combining acute): the mark takes the accent with the letter.
    const decomposed = "Le tokenize\u0301r coupe.";
    assert.deepEqual(marked(decomposed, "tokenizer"), ["tokenize\u0301r"]);
    assert.deepEqual(marked("une école", '"ecole"'), ["école"]);
  });

  it("folds case", () => {
    assert.deepEqual(marked("PARSER and Parser and parser", '"parser"'), [
      "PARSER",
      "Parser",
      "parser",
    ]);
    assert.deepEqual(marked("İstanbul", "istanbul"), ["İstanbul"]);
  });

  it("marks the typed part of a prefix, and a whole word typed whole", () => {
    assert.deepEqual(marked("mention zanzibarite once", "zanzib"), ["zanzib"]);
    assert.deepEqual(marked("mention zanzibarite once", "zanzibarite"), ["zanzibarite"]);
    // The prefix ends after a folded letter and its mark, never between them.
    assert.deepEqual(marked("Tokénisation", "toke"), ["Toké"]);
    assert.deepEqual(marked("Toke\u0301nisation", "toke"), ["Toke\u0301"]);
    // A quoted word is a whole word: no prefix.
    assert.deepEqual(marked("zanzibarite", '"zanzib"'), []);
    // A phrase's last word is a prefix when typed unquoted as one token run (foo.ba).
    assert.deepEqual(marked("call foo.bar() now", "foo.ba"), ["foo.ba"]);
  });

  it("centres the window on a match far into the text and marks it there", () => {
    const text = `${"filler words here ".repeat(200)}the needle is here ${"tail ".repeat(100)}`;
    const terms = termsOf("needle");
    assert.ok(terms);
    const { snippet, matches } = snippetOf(text, terms);
    assert.ok(snippet.startsWith("…") && snippet.endsWith("…"), "cut on both sides");
    assert.equal(matches.length, 1);
    const [a, b] = matches[0]!;
    assert.equal(snippet.slice(a, b), "needle");
    assert.ok(snippet.length <= 200, `a snippet stays short: ${snippet.length}`);
  });

  it("flattens whitespace and keeps the marks on the flattened text", () => {
    assert.deepEqual(marked("empty\n\n  input", '"empty input"'), ["empty input"]);
  });

  it("never opens or closes the window inside a surrogate pair or before a mark", () => {
    // Emoji (surrogate pairs) everywhere a cut could fall.
    for (let shift = 0; shift < 4; shift++) {
      const text = `${"x".repeat(shift)}${"😀".repeat(60)} needle ${"😀".repeat(120)}`;
      const terms = termsOf("needle");
      assert.ok(terms);
      const { snippet, matches } = snippetOf(text, terms);
      assert.ok(snippet.isWellFormed(), `no lone surrogate (shift ${shift})`);
      assert.equal(snippet.slice(...matches[0]!), "needle");
    }
    // Letters with combining marks: no cut leaves a mark without its letter.
    for (let shift = 0; shift < 3; shift++) {
      const text = `${"x".repeat(shift)}${"e\u0301".repeat(50)} needle ${"a\u0308".repeat(120)}`;
      const terms = termsOf("needle");
      assert.ok(terms);
      const { snippet } = snippetOf(text, terms);
      const body = snippet.replace(/^…|…$/g, "");
      assert.doesNotMatch(body, /^\p{M}/u, `the window opens on a letter (shift ${shift})`);
      const afterEnd = text.slice(text.indexOf(body) + body.length);
      assert.doesNotMatch(afterEnd, /^\p{M}/u, `the window closes after a mark (shift ${shift})`);
    }
    // A family emoji (joined by ZWJ) is one character: never cut inside.
    const family = "👨‍👩‍👧";
    const text = `${family.repeat(30)} needle ${family.repeat(60)}`;
    const terms = termsOf("needle");
    assert.ok(terms);
    const body = snippetOf(text, terms).snippet.replace(/^…|…$/g, "");
    assert.ok(body.startsWith(family) || body.startsWith(" "), "opens on a whole emoji");
    assert.ok(body.endsWith(family) || body.endsWith(" "), "closes on a whole emoji");
  });

  it("marks nothing (and shows the start) when no word of the text matches", () => {
    const terms = termsOf("absent");
    assert.ok(terms);
    assert.deepEqual(snippetOf("nothing to see", terms), {
      snippet: "nothing to see",
      matches: [],
    });
  });
});
