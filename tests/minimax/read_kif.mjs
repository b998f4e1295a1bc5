// tests/minimax/read_kif.mjs FILE — a KIF or KI2 record read by tsshogi (the
// record library of the ShogiHome GUI), a reader independent of joseki's:
// prints its tree depth first, one move a line, "DEPTH USI COMMENT" (the
// comment JSON-quoted, its lines joined by \n), the main continuation of a
// move before its variations, the start position's comment first as depth 0.
// Shift_JIS files (.kif, .ki2) are decoded as such. Exit 1 with the reader's
// error on stderr when it refuses the file.
import { readFileSync } from "node:fs";
import { importKIF, importKI2 } from "tsshogi";

const path = process.argv[2];
const bytes = readFileSync(path);
const utf8 = /\.(kifu|ki2u)$/i.test(path) || (bytes[0] === 0xef && bytes[1] === 0xbb);
const text = new TextDecoder(utf8 ? "utf-8" : "shift_jis").decode(bytes);
const record = /\.ki2u?$/i.test(path) ? importKI2(text) : importKIF(text);
if (record instanceof Error) {
  process.stderr.write(`${path}: ${record.message}\n`);
  process.exit(1);
}
const clean = (c) => c.replace(/\n$/, "");
const out = [`0 - ${JSON.stringify(clean(record.first.comment))}`];
const walk = (node, depth) => {
  for (let n = node; n; n = n.branch) {
    if (!("usi" in n.move)) continue; // an ending (投了, 中断...), not a move
    out.push(`${depth} ${n.move.usi} ${JSON.stringify(clean(n.comment))}`);
    walk(n.next, depth + 1);
  }
};
walk(record.first.next, 1);
process.stdout.write(out.join("\n") + "\n");
