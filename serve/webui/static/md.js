// md.js: the small Markdown renderer of the page.
//
// parse(text) turns Markdown into a tree of plain objects
// ({tag, text, children, …}); build(tree, doc) turns that tree into DOM
// nodes with createElement and textContent only. Nothing the model writes
// is ever parsed as HTML: a "<script>" in the text stays the text
// "<script>". The parser is written to stay linear on hostile input: no
// regular expression here can backtrack without bound, every search that
// could be repeated is memoized, and nesting is capped at MAX_DEPTH.
//
// Supported: # headings, paragraphs (a newline is a line break), emphasis
// (* _ ** __ ~~), inline code, fenced code blocks (an unclosed fence runs
// to the end), bullet and ordered lists (nested), block quotes, thematic
// breaks, GFM tables, links, images (shown as links), autolinks and bare
// http(s) URLs.

import { highlight } from './hl.js';

/** Containers and inline spans deeper than this are kept as text. */
const MAX_DEPTH = 8;
/** Candidates tried for one emphasis opener before it is taken as text. */
const MAX_TRIES = 16;
/** The longest link destination looked at. */
const MAX_URL = 2048;

/** parse returns the tree of text: {tag: 'root', children: [...]}. */
export function parse(text) {
  const src = String(text ?? '').replace(/\r\n?/g, '\n');
  return { tag: 'root', children: blocks(src.split('\n').map(expandTabs), 0) };
}

// expandTabs turns leading tabs into four spaces each.
const expandTabs = (line) => line.replace(/^\t+/, (t) => '    '.repeat(t.length));
// indentOf counts a line's leading spaces.
const indentOf = (line) => /^ */.exec(line)[0].length;

const isBlank = (line) => line.trim() === '';

// fenceOpen matches an opening code fence: [indent, fence, info] or null.
function fenceOpen(line) {
  const m = /^( {0,3})(`{3,}|~{3,})/.exec(line);
  if (!m) return null;
  const info = line.slice(m[0].length).trim();
  if (m[2][0] === '`' && info.includes('`')) return null;
  return { indent: m[1].length, fence: m[2], info };
}

// isFenceClose tells whether line closes a fence opened with fence.
function isFenceClose(line, fence) {
  const ind = indentOf(line);
  if (ind > 3) return false;
  const rest = line.slice(ind).trimEnd();
  if (rest.length < fence.length) return false;
  for (const c of rest) if (c !== fence[0]) return false;
  return true;
}

// heading matches an ATX heading: {level, text} or null.
function heading(line) {
  const m = /^ {0,3}(#{1,6})(?=[ \t]|$)/.exec(line);
  if (!m) return null;
  let t = line.slice(m[0].length).trim();
  // A closing run of #s preceded by a space is not part of the text.
  let end = t.length;
  while (end > 0 && t[end - 1] === '#') end--;
  if (end === 0) t = '';
  else if (end < t.length && (t[end - 1] === ' ' || t[end - 1] === '\t')) t = t.slice(0, end).trimEnd();
  return { level: m[1].length, text: t };
}

const isHr = (line) => /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/.test(line);
const isQuote = (line) => /^ {0,3}>/.test(line);

// listItem matches a list marker: {indent, ordered, start, bullet, offset, rest}.
function listItem(line) {
  const m = /^( *)([-*+]|\d{1,9}[.)])([ \t]+|$)/.exec(line);
  if (!m) return null;
  const indent = m[1].length;
  const marker = m[2];
  let spaces = m[3].length;
  if (spaces > 4 || m[3] === '') spaces = 1;
  const ordered = marker.length > 1 || (marker >= '0' && marker <= '9');
  return {
    indent,
    ordered,
    start: ordered ? parseInt(marker, 10) : 1,
    bullet: marker[marker.length - 1],
    offset: indent + marker.length + spaces,
    rest: line.slice(Math.min(line.length, indent + marker.length + m[3].length)),
  };
}

// splitCells splits a table row at its unescaped pipes.
function splitCells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && s[i + 1] === '|') { cur += '|'; i++; continue; }
    if (s[i] === '|') { cells.push(cur.trim()); cur = ''; continue; }
    cur += s[i];
  }
  cells.push(cur.trim());
  return cells;
}

// tableAlign returns the alignments of a table's delimiter row, or null.
function tableAlign(line) {
  if (!line.includes('-')) return null;
  const cells = splitCells(line);
  const aligns = [];
  for (const c of cells) {
    if (!/^:?-+:?$/.test(c)) return null;
    const l = c[0] === ':', r = c[c.length - 1] === ':';
    aligns.push(l && r ? 'center' : r ? 'right' : l ? 'left' : '');
  }
  return aligns;
}

// startsBlock tells whether line interrupts a paragraph.
function startsBlock(line, depth) {
  if (fenceOpen(line) || heading(line) || isHr(line)) return true;
  if (depth >= MAX_DEPTH) return false;
  if (isQuote(line)) return true;
  const li = listItem(line);
  return !!li && li.indent <= 3 && li.rest.trim() !== '' && (!li.ordered || li.start === 1);
}

// blocks parses lines into block nodes.
function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) { i++; continue; }
    const f = fenceOpen(line);
    if (f) { i = fenced(lines, i, f, out); continue; }
    const h = heading(line);
    if (h) { out.push({ tag: 'h' + h.level, children: inline(h.text, 0) }); i++; continue; }
    if (isHr(line)) { out.push({ tag: 'hr' }); i++; continue; }
    if (depth < MAX_DEPTH && isQuote(line)) { i = quote(lines, i, depth, out); continue; }
    const li = listItem(line);
    if (depth < MAX_DEPTH && li && li.indent <= 3) { i = list(lines, i, depth, out); continue; }
    if (line.includes('|') && i + 1 < lines.length) {
      const aligns = tableAlign(lines[i + 1]);
      if (aligns && splitCells(line).length === aligns.length) { i = table(lines, i, aligns, out); continue; }
    }
    i = paragraph(lines, i, depth, out);
  }
  return out;
}

// fenced reads a fenced code block; an unclosed one runs to the end.
function fenced(lines, i, f, out) {
  const body = [];
  let j = i + 1;
  for (; j < lines.length; j++) {
    if (isFenceClose(lines[j], f.fence)) { j++; break; }
    const l = lines[j];
    body.push(l.slice(Math.min(indentOf(l), f.indent)));
  }
  const lang = f.info.split(/\s/, 1)[0] || '';
  out.push({ tag: 'pre', lang, text: body.join('\n') });
  return j;
}

// quote reads a block quote: its lines without the '>' are parsed again.
function quote(lines, i, depth, out) {
  const body = [];
  let j = i;
  for (; j < lines.length && isQuote(lines[j]); j++) {
    body.push(lines[j].replace(/^ {0,3}> ?/, ''));
  }
  out.push({ tag: 'blockquote', children: blocks(body, depth + 1) });
  return j;
}

// list reads a list: its items' lines, without the item's indentation,
// are parsed again. A tight list (no blank line between items) shows its
// items' paragraphs without the paragraph.
function list(lines, i, depth, out) {
  const first = listItem(lines[i]);
  const node = { tag: first.ordered ? 'ol' : 'ul', children: [] };
  if (first.ordered && first.start !== 1) node.start = first.start;
  let loose = false;
  let j = i;
  while (j < lines.length) {
    const li = listItem(lines[j]);
    if (!li || li.ordered !== first.ordered || li.bullet !== first.bullet || li.indent > 3) break;
    const body = [li.rest];
    let k = j + 1, blank = false, prevBlank = false;
    for (; k < lines.length; k++) {
      const l = lines[k];
      if (isBlank(l)) { body.push(''); prevBlank = true; continue; }
      const ind = indentOf(l);
      if (ind >= li.offset) { body.push(l.slice(li.offset)); blank ||= prevBlank; prevBlank = false; continue; }
      if (prevBlank) break;
      const next = listItem(l);
      if ((next && next.indent <= 3) || startsBlock(l, depth)) break;
      body.push(l.trimStart()); // lazy continuation of the paragraph
    }
    while (body.length && body[body.length - 1] === '') body.pop();
    if (blank) loose = true;
    node.children.push({ tag: 'li', children: blocks(body, depth + 1) });
    j = k;
    if (prevBlank) {
      // A blank line ends the list unless the next item follows.
      const n = j < lines.length ? listItem(lines[j]) : null;
      if (!n || n.ordered !== first.ordered || n.bullet !== first.bullet || n.indent > 3) break;
      loose = true;
    }
  }
  if (!loose) {
    for (const item of node.children) {
      item.children = item.children.flatMap((c) => (c.tag === 'p' ? c.children : [c]));
    }
  }
  out.push(node);
  return j;
}

// table reads a GFM table: a header row, the delimiter row, body rows.
function table(lines, i, aligns, out) {
  const row = (line, cellTag) => {
    const cells = splitCells(line);
    return { tag: 'tr', children: aligns.map((align, n) => {
      const cell = { tag: cellTag, children: inline(cells[n] ?? '', 0) };
      if (align) cell.align = align;
      return cell;
    }) };
  };
  const node = { tag: 'table', children: [row(lines[i], 'th')] };
  let j = i + 2;
  for (; j < lines.length && !isBlank(lines[j]) && lines[j].includes('|'); j++) {
    node.children.push(row(lines[j], 'td'));
  }
  out.push(node);
  return j;
}

// paragraph reads lines up to a blank line or another block.
function paragraph(lines, i, depth, out) {
  const body = [lines[i].trim()];
  let j = i + 1;
  for (; j < lines.length && !isBlank(lines[j]) && !startsBlock(lines[j], depth); j++) body.push(lines[j].trim());
  out.push({ tag: 'p', children: inline(body.join('\n'), 0) });
  return j;
}

// Finder memoizes indexOf on one string: a search from a position before
// the last hit finds that hit again, so scanning stays linear.
// noCode holds the backtick run lengths known to have no closing run.
class Finder {
  constructor(s) { this.s = s; this.memo = new Map(); this.noCode = new Set(); }
  find(sub, from) {
    const m = this.memo.get(sub);
    if (m && m.from <= from && (m.idx === -1 || m.idx >= from)) return m.idx;
    const idx = this.s.indexOf(sub, from);
    this.memo.set(sub, { from, idx });
    return idx;
  }
}

// SPECIAL finds the next character that may start something inline.
const SPECIAL_CHARS = '\\\n`*_~[!<hH';
const SPECIAL = /[\\\n`*_~[!<hH]/g;
// AUTOLINK matches <http://…> at its lastIndex only (sticky).
const AUTOLINK = /<(https?:\/\/[^\s<>]{1,2048})>/iy;
const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const isSpace = (c) => c === undefined || c === ' ' || c === '\t' || c === '\n';
const isWord = (c) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

/** inline parses a span of text into inline nodes. */
export function inline(s, depth, noLinks = false) {
  const out = [];
  const fd = new Finder(s);
  let text = '';
  const flush = () => { if (text) { out.push({ tag: 'text', text }); text = ''; } };
  const push = (node) => { flush(); out.push(node); };
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (!SPECIAL_CHARS.includes(c)) {
      // Copy the run of ordinary characters up to the next special one.
      SPECIAL.lastIndex = i;
      const next = SPECIAL.exec(s)?.index ?? s.length;
      text += s.slice(i, next);
      i = next;
      continue;
    }
    if (c === '\\' && i + 1 < s.length && (PUNCT.includes(s[i + 1]) || s[i + 1] === '\n')) {
      if (s[i + 1] === '\n') push({ tag: 'br' });
      else text += s[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') { push({ tag: 'br' }); i++; continue; }
    if (c === '`') { i = codeSpan(s, i, fd, push, (t) => { text += t; }); continue; }
    if ((c === '*' || c === '_' || c === '~') && depth < MAX_DEPTH) {
      const r = emphasis(s, i, fd, depth, noLinks);
      if (r) { push(r.node); i = r.end; continue; }
      let k = i;
      while (s[k] === c) k++;
      text += s.slice(i, k);
      i = k;
      continue;
    }
    if (!noLinks && (c === '[' || (c === '!' && s[i + 1] === '[')) && depth < MAX_DEPTH) {
      const r = link(s, i, fd, depth);
      if (r) { push(r.node); i = r.end; continue; }
    }
    if (!noLinks && c === '<') {
      AUTOLINK.lastIndex = i;
      const m = AUTOLINK.exec(s);
      if (m) { push(linkNode(m[1])); i += m[0].length; continue; }
    }
    if (!noLinks && (c === 'h' || c === 'H') && !isWord(s[i - 1])) {
      const end = bareURL(s, i);
      if (end > i) { push(linkNode(s.slice(i, end))); i = end; continue; }
    }
    text += c;
    i++;
  }
  flush();
  return out;
}

// codeSpan reads a code span at i: a backtick run closed by a run of the
// same length. An unmatched run is text.
function codeSpan(s, i, fd, push, addText) {
  let n = 0;
  while (s[i + n] === '`') n++;
  const run = '`'.repeat(n);
  let from = i + n;
  for (;;) {
    const j = fd.noCode.has(n) ? -1 : fd.find(run, from);
    if (j === -1) { fd.noCode.add(n); addText(run); return i + n; }
    let k = j;
    while (s[k] === '`') k++;
    if (k - j === n) {
      let code = s.slice(i + n, j).replace(/\n/g, ' ');
      if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim()) code = code.slice(1, -1);
      push({ tag: 'code', text: code });
      return k;
    }
    from = k;
  }
}

// emphasis reads *em*, **strong**, _em_, __strong__ or ~~del~~ at i.
function emphasis(s, i, fd, depth, noLinks) {
  const c = s[i];
  let run = 0;
  while (s[i + run] === c) run++;
  const sizes = c === '~' ? (run === 2 ? [2] : []) : run >= 2 ? [2, 1] : [1];
  for (const n of sizes) {
    const delim = c.repeat(n);
    const after = s[i + n];
    if (isSpace(after) || after === c && n === run) continue;
    if (c === '_' && isWord(s[i - 1])) continue;
    let from = i + n + 1;
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      let j = fd.find(delim, from);
      if (j === -1) break;
      // Take the last delimiter of a longer run: ***a*** is em(strong(a)).
      while (s[j + n] === c && run > n) j++;
      const before = s[j - 1];
      const next = s[j + n];
      const ok = !isSpace(before) && !(c === '_' && isWord(next)) && !(c === '~' && next === '~');
      if (ok && j > i + n) {
        const tag = c === '~' ? 'del' : n === 2 ? 'strong' : 'em';
        return { node: { tag, children: inline(s.slice(i + n, j), depth + 1, noLinks) }, end: j + n };
      }
      from = j + 1;
    }
  }
  return null;
}

// link reads [text](url) or ![alt](url) at i.
function link(s, i, fd, depth) {
  const image = s[i] === '!';
  const open = image ? i + 1 : i;
  const close = fd.find(']', open + 1);
  if (close === -1 || s[close + 1] !== '(') return null;
  const inner = fd.find('[', open + 1);
  if (inner !== -1 && inner < close) return null;
  const label = s.slice(open + 1, close);
  let j = close + 2;
  while (s[j] === ' ') j++;
  const start = j;
  let parens = 0;
  for (; j < s.length && j - start < MAX_URL; j++) {
    const ch = s[j];
    if (ch === '(') parens++;
    else if (ch === ')') { if (parens === 0) break; parens--; }
    else if (isSpace(ch) || ch === '[' || ch === ']') break;
  }
  let url = s.slice(start, j);
  if (url[0] === '<' && url[url.length - 1] === '>') url = url.slice(1, -1);
  // An optional title: "…" or '…'.
  while (s[j] === ' ') j++;
  if (s[j] === '"' || s[j] === "'") {
    const q = fd.find(s[j], j + 1);
    if (q === -1 || q - j > MAX_URL) return null;
    j = q + 1;
    while (s[j] === ' ') j++;
  }
  if (s[j] !== ')') return null;
  const children = image
    ? [{ tag: 'text', text: label ? 'image: ' + label : 'image' }]
    : inline(label, depth + 1, true);
  return { node: linkNode(url, children), end: j + 1 };
}

// linkNode is a link to href showing children, or href itself.
function linkNode(href, children = [{ tag: 'text', text: href }]) {
  return { tag: 'a', href, children };
}

// bareURL returns the end of an http(s) URL starting at i, or i.
function bareURL(s, i) {
  const head = s.slice(i, i + 8).toLowerCase();
  if (!head.startsWith('http://') && !head.startsWith('https://')) return i;
  let j = i;
  while (j < s.length && j - i < MAX_URL && !isSpace(s[j]) && s[j] !== '<' && s[j] !== '>' && s[j] !== '`') j++;
  // Trailing punctuation belongs to the sentence, as does an unmatched ')'.
  while (j > i && '.,;:!?\'"*_~'.includes(s[j - 1])) j--;
  const url = s.slice(i, j);
  let unmatched = url.split(')').length - url.split('(').length;
  while (unmatched-- > 0 && s[j - 1] === ')') j--;
  return s.slice(i, j).length > head.indexOf('//') + 2 ? j : i;
}

/** isSafeHref tells whether href may be a clickable link: http(s) only. */
export function isSafeHref(href) {
  return /^https?:\/\/[^\s]+$/i.test(String(href).trim());
}

// The tags build makes elements for; a node with another tag is text.
const ELEMENTS = new Set([
  'p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote', 'hr',
  'br', 'em', 'strong', 'del', 'code', 'table', 'tr', 'th', 'td',
]);

/**
 * build turns a tree from parse into a DocumentFragment of doc. Only
 * createElement, createTextNode, textContent and a few fixed attributes
 * are used. A link is its text followed by its address in plain text; it
 * is an <a> only for http(s) addresses.
 */
export function build(tree, doc = globalThis.document) {
  const frag = doc.createDocumentFragment();
  for (const child of tree.children || []) frag.appendChild(node(child, doc));
  return frag;
}

// make creates an element of doc with a class and text.
function make(doc, tag, cls, text) {
  const e = doc.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function node(n, doc) {
  if (n.tag === 'text') return doc.createTextNode(n.text);
  if (n.tag === 'code') return make(doc, 'code', '', n.text);
  if (n.tag === 'pre') return codeBlock(n, doc);
  if (n.tag === 'a') return linkElement(n, doc);
  if (!ELEMENTS.has(n.tag)) return doc.createTextNode(n.text ?? '');
  const e = make(doc, n.tag, /^(left|right|center)$/.test(n.align) ? 'align-' + n.align : '');
  if (n.tag === 'ol' && Number.isInteger(n.start)) e.setAttribute('start', String(n.start));
  for (const c of n.children || []) e.appendChild(node(c, doc));
  return e;
}

// codeBlock is <pre data-lang><code> with the highlighter's spans.
function codeBlock(n, doc) {
  const pre = make(doc, 'pre');
  const code = pre.appendChild(make(doc, 'code'));
  const lang = String(n.lang || '').toLowerCase().replace(/[^a-z0-9+#-]/g, '').slice(0, 20);
  if (lang) pre.setAttribute('data-lang', lang);
  for (const t of highlight(n.text, lang)) {
    code.appendChild(t.cls ? make(doc, 'span', 'hl-' + t.cls, t.text) : doc.createTextNode(t.text));
  }
  return pre;
}

// linkElement is span.link: the link's text, as an <a> for http(s), then
// its address unless the text is the address.
function linkElement(n, doc) {
  const href = String(n.href || '').trim();
  const span = make(doc, 'span', 'link');
  let target = span;
  if (isSafeHref(href)) {
    target = span.appendChild(make(doc, 'a'));
    target.setAttribute('href', href);
    target.setAttribute('rel', 'noopener noreferrer');
    target.setAttribute('target', '_blank');
  }
  for (const c of n.children || []) target.appendChild(node(c, doc));
  if (textOf(n) !== href) span.appendChild(make(doc, 'span', 'link-addr', ' <' + href + '>'));
  return span;
}

/** textOf returns the plain text of a tree node. */
export function textOf(n) {
  if (n.text !== undefined) return n.text;
  if (n.tag === 'br') return '\n';
  return (n.children || []).map(textOf).join('');
}
