// A QR code for the terminal (issue 29 item 4: the phone's device link): qrcode-generator
// (Kazuhiko Arase's, no dependencies; docs/package.md) encodes, and each pair of module rows
// becomes one line of half blocks, dark on light, with the quiet zone the standard asks for.
import qrcode from "qrcode-generator";

const QUIET = 2;

/** `text` as lines of `▀`, `▄`, `█` and spaces: light modules are blocks, so it reads on dark. */
export function qrLines(text: string): string[] {
  const q = qrcode(0, "M");
  q.addData(text, "Byte");
  q.make();
  const n = q.getModuleCount();
  const dark = (r: number, c: number) =>
    r >= 0 && c >= 0 && r < n && c < n ? q.isDark(r, c) : false;
  const lines: string[] = [];
  for (let r = -QUIET; r < n + QUIET; r += 2) {
    let line = "";
    for (let c = -QUIET; c < n + QUIET; c++) {
      const top = !dark(r, c);
      const bottom = !dark(r + 1, c);
      line += top && bottom ? "█" : top ? "▀" : bottom ? "▄" : " ";
    }
    lines.push(line);
  }
  return lines;
}
