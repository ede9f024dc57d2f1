import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { codePointMarker, makeVisible } from "../../src/present/visible.ts";
import { firstForbidden, isForbidden } from "../cli/hostile.ts";

describe("makeVisible", () => {
  it("passes printable text, LF, TAB, ZWJ and ZWNJ unchanged when nothing is hostile", () => {
    const samples = [
      "plain ASCII ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./",
      "line one\nline two\tcolumn",
      "naïve café → 日本語 한국어 🙂",
      "family 👨\u200d👩\u200d👧 and flag 🇫🇷 and heart ❤\ufe0f",
      "Persian with ZWNJ: می\u200cخواهم",
      "combining: e\u0301 a\u0308",
      "",
    ];
    for (const s of samples) assert.equal(makeVisible(s), s);
  });

  it("shows C0 controls in caret notation, ESC as ^[, DEL as ^? when they appear", () => {
    assert.equal(makeVisible("\u0000"), "^@");
    assert.equal(makeVisible("\u0001\u0007\u0008"), "^A^G^H");
    assert.equal(makeVisible("\u001b"), "^[");
    assert.equal(makeVisible("\u001c\u001d\u001e\u001f"), "^\\^]^^^_");
    assert.equal(makeVisible("a\rb"), "a^Mb");
    assert.equal(makeVisible("\u000b\u000c"), "^K^L");
    assert.equal(makeVisible("\u007f"), "^?");
  });

  it("shows LF as ^J only when showNewlines is set", () => {
    assert.equal(makeVisible("a\nb"), "a\nb");
    assert.equal(makeVisible("a\nb", { showNewlines: true }), "a^Jb");
    assert.equal(makeVisible("a\r\nb", { showNewlines: true }), "a^M^Jb");
    assert.equal(makeVisible("a\tb", { showNewlines: true }), "a\tb");
  });

  it("shows C1 controls, separators, bidi and invisible characters as <U+XXXX>", () => {
    assert.equal(makeVisible("\u0080\u0085\u009b\u009f"), "<U+0080><U+0085><U+009B><U+009F>");
    assert.equal(makeVisible("a\u2028b\u2029c"), "a<U+2028>b<U+2029>c");
    const bidi = [0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e];
    for (const cp of [...bidi, 0x2066, 0x2067, 0x2068, 0x2069]) {
      assert.equal(makeVisible(`x${String.fromCodePoint(cp)}y`), `x${codePointMarker(cp)}y`);
    }
    for (const cp of [0x200b, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xfeff]) {
      assert.equal(makeVisible(String.fromCodePoint(cp)), codePointMarker(cp));
    }
  });

  it("shows tag characters as <U+Exxxx> when a flag sequence carries them", () => {
    assert.equal(makeVisible("\u{e0001}\u{e0041}\u{e007f}"), "<U+E0001><U+E0041><U+E007F>");
    const england = "🏴\u{e0067}\u{e0062}\u{e0065}\u{e006e}\u{e0067}\u{e007f}";
    assert.equal(makeVisible(england), "🏴<U+E0067><U+E0062><U+E0065><U+E006E><U+E0067><U+E007F>");
  });

  it("shows lone surrogates as <U+D800> and keeps valid pairs when surrogates are unpaired", () => {
    assert.equal(makeVisible("\ud800"), "<U+D800>");
    assert.equal(makeVisible("a\udc00b"), "a<U+DC00>b");
    assert.equal(makeVisible("\udc00\ud800"), "<U+DC00><U+D800>");
    assert.equal(makeVisible("\ud83d\ude00"), "😀");
    assert.equal(makeVisible("\ud83d"), "<U+D83D>");
    assert.equal(makeVisible("x\ud83dy\ude00"), "x<U+D83D>y<U+DE00>");
  });

  it("defuses an OSC 52 clipboard write when a transcript carries one", () => {
    const osc52 = "copy this: \u001b]52;c;cm0gLXJmIH4vCg==\u0007 done";
    const out = makeVisible(osc52);
    assert.equal(out, "copy this: ^[]52;c;cm0gLXJmIH4vCg==^G done");
    assert.equal(firstForbidden(out), null);
    // The string terminator form, ESC \ , and the 8-bit OSC (U+009D) and ST (U+009C).
    assert.equal(makeVisible("\u001b]52;c;eA==\u001b\\"), "^[]52;c;eA==^[\\");
    assert.equal(makeVisible("\u009d52;c;eA==\u009c"), "<U+009D>52;c;eA==<U+009C>");
  });

  it("defuses a window title change when a tool output sets one", () => {
    const out = makeVisible("\u001b]0;root@prod: rm -rf /\u0007\u001b]2;x\u001b\\");
    assert.equal(out, "^[]0;root@prod: rm -rf /^G^[]2;x^[\\");
    assert.equal(firstForbidden(out), null);
  });

  it("defuses cursor moves and erases when output tries to overwrite earlier lines", () => {
    const moves = "ok\u001b[1A\u001b[2K\u001b[10;20H\u001b[2J\u001b[H\u001b7\u001b8\r\u009b1A";
    const out = makeVisible(moves);
    assert.equal(out, "ok^[[1A^[[2K^[[10;20H^[[2J^[[H^[7^[8^M<U+009B>1A");
    assert.equal(firstForbidden(out), null);
  });

  it("shows bidi spoofing of a file name when an override reorders it", () => {
    // Displayed raw, this reads "invoiceexe.txt"; it is really an .exe.
    const name = "invoice\u202etxt.exe";
    assert.equal(makeVisible(name), "invoice<U+202E>txt.exe");
    const isolate = "\u2067admin\u2069 \u2066user\u2069 \u200fx\u200e \u061c";
    assert.equal(
      makeVisible(isolate),
      "<U+2067>admin<U+2069> <U+2066>user<U+2069> <U+200F>x<U+200E> <U+061C>",
    );
  });

  it("leaves no forbidden character for any code point when each is made visible", () => {
    const leaks: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      const s = String.fromCodePoint(cp);
      const out = makeVisible(s);
      if (firstForbidden(out) !== null) leaks.push(codePointMarker(cp));
      if (isForbidden(cp) !== (out !== s)) leaks.push(`changed? ${codePointMarker(cp)}`);
      if (cp === 0x0a && firstForbidden(makeVisible(s, { showNewlines: true }), true) !== null) {
        leaks.push("LF with showNewlines");
      }
    }
    assert.deepEqual(leaks.slice(0, 10), []);
  });

  it("is idempotent when applied to its own output", () => {
    const s = "\u001b[31m\u202e\ud800\u2028\u{e0041}\u0085\u007f\n";
    const once = makeVisible(s, { showNewlines: true });
    assert.equal(makeVisible(once, { showNewlines: true }), once);
  });
});
