// The HTML export's one style sheet, inline (the file's CSP allows it by hash). Light and
// dark follow prefers-color-scheme; nothing is loaded from anywhere.
export const EXPORT_CSS = `
:root{color-scheme:light dark;--bg:#f6f7f9;--panel:#fff;--ink:#1d2430;--muted:#5b6472;--line:#d5dae1;--accent:#245c9a;--user:#eef4ff;--tool:#f3f5f7;--code:#f4f6f8;--add:#e6ffed;--del:#ffeef0;--bad:#b91c1c;--warn:#fff7ed;--kw:#a626a4;--str:#2f7d32;--num:#7a5300;--com:#5b6472;--ttl:#245c9a;--blt:#b7410e}
@media (prefers-color-scheme:dark){:root{--bg:#12161c;--panel:#1a1f27;--ink:#e3e7ee;--muted:#a3adbb;--line:#343c48;--accent:#7cb4f0;--user:#1b2638;--tool:#161b22;--code:#0f1318;--add:#143321;--del:#3a1619;--bad:#fc8181;--warn:#2d2214;--kw:#d7a8f5;--str:#9ad49a;--num:#f0c674;--com:#9099a6;--ttl:#8cc3ff;--blt:#f5a97f}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:960px;padding:16px;font:14px/1.5 system-ui,"DejaVu Sans",sans-serif;color:var(--ink);background:var(--bg)}
h1{font-size:20px;margin:0 0 4px;overflow-wrap:anywhere}
footer h2{font-size:15px;margin:0 0 4px}footer{margin:16px 0}
.facts,.muted,.head{color:var(--muted);font-size:12px}
.facts{overflow-wrap:anywhere}
a{color:var(--accent)}
.part{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:0 0 10px;unicode-bidi:isolate;overflow-wrap:anywhere}
.part.user{background:var(--user)}
.part.toolResult,.part.bash-execution{background:var(--tool)}
.part.compaction,.part.branch-summary{border-style:dashed}
.head{display:flex;flex-wrap:wrap;gap:2px 8px;margin-bottom:4px}
.who{font-weight:700;color:var(--ink)}
.model,.entry,code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;margin:4px 0}
pre.code,pre.diff{background:var(--code);border:1px solid var(--line);border-radius:4px;padding:6px 8px}
pre.diff{padding:4px 0}pre.diff span{display:block;padding:0 8px}
.add{background:var(--add)}.del{background:var(--del)}
.md p{margin:0 0 8px}.md :not(pre)>code{background:var(--code);padding:0 3px;border-radius:3px}
.md blockquote{margin:6px 0;padding-left:10px;border-left:3px solid var(--line);color:var(--muted)}
.md h1,.md h2,.md h3,.md h4,.md h5,.md h6{font-size:15px;margin:10px 0 6px}
.tool-call{border-left:3px solid var(--accent);padding-left:8px;margin:6px 0}
.tool-path{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-weight:600;font-size:12px}
.badge{padding:0 5px;border-radius:8px;font-size:11px;background:var(--line)}
.badge.error{color:var(--bad)}
.notice{border-left:4px solid var(--bad);background:var(--warn);padding:4px 8px;border-radius:4px}
details summary{cursor:pointer;color:var(--muted);font-size:12px}
.thinking{border-left:3px solid var(--line);padding-left:8px;color:var(--muted)}
img{max-width:100%;max-height:360px;border:1px solid var(--line)}
.hl-keyword,.hl-meta,.hl-selector-tag{color:var(--kw)}.hl-string,.hl-regexp,.hl-addition{color:var(--str)}
.hl-number,.hl-literal,.hl-attr,.hl-attribute,.hl-variable,.hl-property{color:var(--num)}
.hl-comment,.hl-quote{color:var(--com);font-style:italic}.hl-title,.hl-section,.hl-name{color:var(--ttl)}
.hl-built_in,.hl-type,.hl-params,.hl-deletion{color:var(--blt)}
`;
