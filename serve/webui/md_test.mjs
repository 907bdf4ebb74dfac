// Tests of the page's Markdown renderer (static/md.js) and highlighter
// (static/hl.js): node --test serve/webui/ (webui_test.go runs it).
//
// build() runs against a small fake document that records every element
// and attribute made, and throws on any way of parsing HTML (innerHTML,
// outerHTML, insertAdjacentHTML): so the hostile-input tests check that
// only known, inert structure comes out.

import test from 'node:test';
import assert from 'node:assert/strict';
import { parse, build, textOf, isSafeHref } from './static/md.js';
import { highlight } from './static/hl.js';

// ---- a fake document ----------------------------------------------------

class FakeNode {
  constructor(doc, type, tag = '', text = '') {
    this.doc = doc;
    this.nodeType = type; // 1 element, 3 text, 11 fragment
    this.tagName = tag.toUpperCase();
    this.attrs = new Map();
    this.childNodes = [];
    this.text = text;
  }
  appendChild(c) {
    if (!(c instanceof FakeNode)) throw new Error('appendChild of a non-node');
    if (c.nodeType === 11) { this.childNodes.push(...c.childNodes); c.childNodes = []; } else this.childNodes.push(c);
    return c;
  }
  setAttribute(name, value) {
    this.doc.attrs.push(name);
    this.attrs.set(name, String(value));
  }
  getAttribute(name) { return this.attrs.has(name) ? this.attrs.get(name) : null; }
  set className(v) { this.setAttribute('class', v); }
  get className() { return this.getAttribute('class') || ''; }
  set textContent(v) { this.childNodes = [new FakeNode(this.doc, 3, '', String(v))]; }
  get textContent() { return this.nodeType === 3 ? this.text : this.childNodes.map((c) => c.textContent).join(''); }
  set innerHTML(_) { throw new Error('innerHTML used'); }
  set outerHTML(_) { throw new Error('outerHTML used'); }
  insertAdjacentHTML() { throw new Error('insertAdjacentHTML used'); }
  // elements returns this node and every element below it.
  *elements() {
    if (this.nodeType === 1) yield this;
    for (const c of this.childNodes) yield* c.elements();
  }
  find(tag) { return [...this.elements()].filter((e) => e.tagName === tag.toUpperCase()); }
}

class FakeDocument {
  constructor() { this.tags = []; this.attrs = []; }
  createElement(tag) { this.tags.push(tag); return new FakeNode(this, 1, tag); }
  createTextNode(text) { return new FakeNode(this, 3, '', text); }
  createDocumentFragment() { return new FakeNode(this, 11); }
}

/** render parses and builds text, returning a root element holding the result. */
function render(text) {
  const doc = new FakeDocument();
  const root = new FakeNode(doc, 1, 'div');
  root.appendChild(build(parse(text), doc));
  return { root, doc };
}

const ALLOWED_TAGS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote', 'hr', 'br',
  'em', 'strong', 'del', 'code', 'pre', 'table', 'tr', 'th', 'td', 'a', 'span']);
const ALLOWED_ATTRS = new Set(['href', 'rel', 'target', 'start', 'class', 'data-lang']);

/** assertInert checks that only allowed, inert structure was made. */
function assertInert({ root, doc }) {
  for (const tag of doc.tags) assert.ok(ALLOWED_TAGS.has(tag), `element <${tag}> made`);
  for (const name of doc.attrs) assert.ok(ALLOWED_ATTRS.has(name), `attribute ${name} set`);
  for (const a of root.find('a')) {
    assert.match(a.getAttribute('href'), /^https?:\/\//i, 'a link that is not http(s)');
    assert.equal(a.getAttribute('rel'), 'noopener noreferrer');
    assert.equal(a.getAttribute('target'), '_blank');
  }
}

/** shape renders a tree as a compact string: tag(children) or "text". */
function shape(nodes) {
  return nodes.map((n) => {
    if (n.tag === 'text') return JSON.stringify(n.text);
    if (n.tag === 'code' || n.tag === 'pre') return `${n.tag}${n.lang ? ':' + n.lang : ''}[${JSON.stringify(n.text)}]`;
    if (n.tag === 'a') return `a<${n.href}>(${shape(n.children)})`;
    return n.children ? `${n.tag}(${shape(n.children)})` : n.tag;
  }).join(' ');
}
const md = (text) => shape(parse(text).children);

// ---- structure ------------------------------------------------------------

test('parse returns plain objects', () => {
  const tree = parse('# T\n\n- a *b* `c`\n\n```js\nx\n```\n[l](https://x.y)');
  assert.deepEqual(JSON.parse(JSON.stringify(tree)), tree);
  assert.equal(tree.tag, 'root');
});

test('headings', () => {
  assert.equal(md('# One'), 'h1("One")');
  assert.equal(md('## Two ##'), 'h2("Two")');
  assert.equal(md('###### Six'), 'h6("Six")');
  assert.equal(md('####### Seven'), 'p("####### Seven")');
  assert.equal(md('#NoSpace'), 'p("#NoSpace")');
  assert.equal(md('# C# #'), 'h1("C#")');
  assert.equal(md('# *x*'), 'h1(em("x"))');
});

test('paragraphs, line breaks and rules', () => {
  assert.equal(md('a\nb\n\nc'), 'p("a" br "b") p("c")');
  assert.equal(md('a\n\n---\n\nb'), 'p("a") hr p("b")');
  assert.equal(md('* * *'), 'hr');
  assert.equal(md('> quoted\n> more'), 'blockquote(p("quoted" br "more"))');
});

test('emphasis', () => {
  assert.equal(md('**bold** and *it* and __b__ and _i_ and ~~gone~~'),
    'p(strong("bold") " and " em("it") " and " strong("b") " and " em("i") " and " del("gone"))');
  assert.equal(md('***both***'), 'p(strong(em("both")))');
  assert.equal(md('**a *b* c**'), 'p(strong("a " em("b") " c"))');
  assert.equal(md('snake_case_name and 2 * 3 * 4'), 'p("snake_case_name and 2 * 3 * 4")');
  assert.equal(md('**unclosed'), 'p("**unclosed")');
  assert.equal(md('\\*not em\\*'), 'p("*not em*")');
});

test('inline code', () => {
  assert.equal(md('use `x <b>y</b>` here'), 'p("use " code["x <b>y</b>"] " here")');
  assert.equal(md('``a ` b``'), 'p(code["a ` b"])');
  assert.equal(md('a `b'), 'p("a `b")');
  assert.equal(md('`*not em*`'), 'p(code["*not em*"])');
});

test('fenced code blocks', () => {
  assert.equal(md('```go\nfunc main() {}\n```'), 'pre:go["func main() {}"]');
  assert.equal(md('~~~\n<script>x</script>\n~~~'), 'pre["<script>x</script>"]');
  assert.equal(md('````\n```\ninner\n```\n````'), 'pre["```\\ninner\\n```"]');
  assert.equal(md('```py\nunclosed\n# not a heading'), 'pre:py["unclosed\\n# not a heading"]');
  assert.equal(md('text\n```\ncode\n```\nafter'), 'p("text") pre["code"] p("after")');
  const { root } = render('```js\nconst x = "s"; // c\n```');
  const pre = root.find('pre')[0];
  assert.equal(pre.textContent, 'const x = "s"; // c');
  assert.equal(pre.getAttribute('data-lang'), 'js');
  assert.ok(root.find('span').some((s) => s.className === 'hl-kw' && s.textContent === 'const'));
});

test('lists', () => {
  assert.equal(md('- one\n- two'), 'ul(li("one") li("two"))');
  assert.equal(md('* a\n* b'), 'ul(li("a") li("b"))');
  assert.equal(md('1. a\n2. b'), 'ol(li("a") li("b"))');
  const ol = parse('3. c\n4. d').children[0];
  assert.equal(ol.start, 3);
  assert.equal(render('3. c\n4. d').root.find('ol')[0].getAttribute('start'), '3');
  assert.equal(md('- a\n  - b\n  - c\n- d'), 'ul(li("a" ul(li("b") li("c"))) li("d"))');
  assert.equal(md('- a\n\n- b'), 'ul(li(p("a")) li(p("b")))');
  assert.equal(md('- a\ncontinued'), 'ul(li("a" br "continued"))');
  assert.equal(md('- a\n\nafter'), 'ul(li("a")) p("after")');
  assert.equal(md('- `code` and **b**'), 'ul(li(code["code"] " and " strong("b")))');
});

test('tables', () => {
  assert.equal(md('| a | b |\n|---|--:|\n| 1 | 2 |'), 'table(tr(th("a") th("b")) tr(td("1") td("2")))');
  assert.equal(parse('a|b\n-|:-:\n1|2').children[0].children[1].children[1].align, 'center');
  assert.equal(md('a | b\nnot a table'), 'p("a | b" br "not a table")');
});

test('links', () => {
  assert.equal(md('[site](https://example.com/a?b=c)'), 'p(a<https://example.com/a?b=c>("site"))');
  assert.equal(md('see <https://x.y/z>.'), 'p("see " a<https://x.y/z>("https://x.y/z") ".")');
  assert.equal(md('go to https://x.y/z, then'), 'p("go to " a<https://x.y/z>("https://x.y/z") ", then")');
  assert.equal(md('(https://x.y/a_(b))'), 'p("(" a<https://x.y/a_(b)>("https://x.y/a_(b)") ")")');
  assert.equal(md('![alt](https://x.y/i.png)'), 'p(a<https://x.y/i.png>("image: alt"))');
  assert.equal(md('[a](<https://x.y> "title")'), 'p(a<https://x.y>("a"))');
  assert.equal(md('[no link]'), 'p("[no link]")');

  const { root } = render('[site](https://example.com/)');
  const a = root.find('a')[0];
  assert.equal(a.getAttribute('href'), 'https://example.com/');
  assert.equal(a.getAttribute('rel'), 'noopener noreferrer');
  assert.equal(a.getAttribute('target'), '_blank');
  assert.equal(root.textContent, 'site <https://example.com/>');
  // A link whose text is its address shows it once.
  assert.equal(render('https://x.y/').root.textContent, 'https://x.y/');
});

test('links that are not http(s) are plain text with their address', () => {
  for (const href of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,<b>x</b>', 'vbscript:x', '/relative', 'file:///etc/passwd', 'mailto:a@b.c']) {
    const r = render(`[click](${href})`);
    assertInert(r);
    assert.equal(r.root.find('a').length, 0, href);
    assert.ok(r.root.textContent.includes(href), `the address ${href} is shown`);
    assert.ok(r.root.textContent.includes('click'));
  }
  assert.equal(isSafeHref('https://a.b'), true);
  assert.equal(isSafeHref(' http://a.b '), true);
  assert.equal(isSafeHref('javascript:alert(1)'), false);
  assert.equal(isSafeHref('https://a.b/ x'), false);
});

// ---- hostile input ----------------------------------------------------------

const HOSTILE = [
  '<script>window.__pwned = 1</script>',
  '<img src=x onerror="window.__pwned = 3">',
  '<a href="javascript:alert(1)">x</a>',
  '<iframe src="https://evil"></iframe><object data=x></object><embed src=x>',
  '<style>body{display:none}</style><svg onload=alert(1)>',
  '[a link](javascript:window.__pwned=4)',
  '[x](javascript:alert(1) "t")',
  '<javascript:alert(1)>',
  '![img](javascript:alert(1))',
  '```html\n<script>alert(1)</script>\n```',
  '`<img src=x onerror=alert(1)>`',
  '# <script>alert(1)</script>',
  '- <b onclick=alert(1)>x</b>\n- [y](data:text/html;base64,PHNjcmlwdD4=)',
  '| <script> | b |\n|---|---|\n| <img src=x onerror=alert(1)> | [z](javascript:z) |',
  '> <iframe srcdoc="<script>alert(1)</script>">',
  '```\nunclosed <script>alert(1)</script>',
  '&lt;script&gt; &#106;avascript:alert(1)',
];

test('hostile input yields only inert structure and keeps its text', () => {
  for (const text of HOSTILE) {
    const r = render(text);
    assertInert(r);
    for (const tag of ['script', 'img', 'iframe', 'object', 'embed', 'style', 'svg', 'b']) {
      assert.ok(!r.doc.tags.includes(tag), `<${tag}> made from ${JSON.stringify(text)}`);
    }
  }
  const r = render('Inline: <script>window.__pwned = 2</script> and <img src=x onerror="window.__pwned = 3">');
  assert.equal(r.root.textContent, 'Inline: <script>window.__pwned = 2</script> and <img src=x onerror="window.__pwned = 3">');
  assert.deepEqual(r.root.find('p').length, 1);
  assert.deepEqual(r.root.childNodes[0].childNodes.map((c) => c.nodeType), [3]);
});

test('the MARKUP scenario renders as text and structure', () => {
  const text = '# Markup\n\nSome **bold**, *italic* and `inline <b>code</b>`.\n\n- one\n- two\n\n```html\n<script>window.__pwned = 1</script>\n```\n\nInline: <script>window.__pwned = 2</script> and <img src=x onerror="window.__pwned = 3"> and [a link](javascript:window.__pwned=4) end.\n';
  const r = render(text);
  assertInert(r);
  assert.equal(r.root.find('h1')[0].textContent, 'Markup');
  assert.equal(r.root.find('strong')[0].textContent, 'bold');
  assert.equal(r.root.find('em')[0].textContent, 'italic');
  assert.equal(r.root.find('code')[0].textContent, 'inline <b>code</b>');
  assert.equal(r.root.find('li').length, 2);
  assert.equal(r.root.find('pre')[0].textContent, '<script>window.__pwned = 1</script>');
  assert.equal(r.root.find('a').length, 0);
  assert.ok(r.root.textContent.includes('a link <javascript:window.__pwned=4>'));
});

test('unknown tags in a tree are text', () => {
  const doc = new FakeDocument();
  const frag = build({ tag: 'root', children: [{ tag: 'script', text: 'alert(1)' }, { tag: 'img', href: 'x' }] }, doc);
  assert.deepEqual(doc.tags, []);
  assert.equal(frag.textContent, 'alert(1)');
});

// Pathological inputs of about 1 MB: each must parse quickly and build.
// A quadratic scan of 1 MB would take hours, so the generous bound
// (machines running tests in parallel are slow) still catches one; deep
// nesting must not overflow the stack.
const HUGE = {
  'plain text': '0123456789'.repeat(100000),
  'stars': '*a '.repeat(330000),
  'underscores': '_a'.repeat(500000),
  'open brackets': '['.repeat(1000000) + ']',
  'broken links': '[a](x'.repeat(200000),
  'backtick runs': '`a``'.repeat(250000),
  'autolink heads': '<http://a'.repeat(110000),
  'nested quotes': '> '.repeat(500000) + 'x',
  'nested lists': Array.from({ length: 20000 }, (_, i) => ' '.repeat((i % 200) * 2) + '- x').join('\n'),
  'nested emphasis': '**a *b '.repeat(140000),
  'heading of spaces': '# ' + ' '.repeat(1000000) + 'x',
  'rule of spaces': '-' + ' '.repeat(1000000) + 'x',
  'dashes': '- '.repeat(500000) + 'x',
  'rule then text': '* '.repeat(500000) + '\n' + '_ '.repeat(500000) + 'x',
  'many lines': 'a\n'.repeat(500000),
  'table rows': ('|a'.repeat(100) + '\n').repeat(5000),
  'unclosed fence': '```\n' + '<script>x</script>\n'.repeat(50000),
  'urls': 'http://x.y/'.repeat(90000),
};

for (const [name, text] of Object.entries(HUGE)) {
  test(`huge input: ${name}`, () => {
    const t0 = performance.now();
    const tree = parse(text);
    const ms = performance.now() - t0;
    assert.ok(ms < 15000, `${name} took ${ms.toFixed(0)} ms`);
    const doc = new FakeDocument();
    const root = new FakeNode(doc, 1, 'div');
    root.appendChild(build(tree, doc));
    assertInert({ root, doc });
  });
}

test('random input never throws and stays inert', () => {
  const alphabet = ['*', '_', '`', '[', ']', '(', ')', '<', '>', '#', '-', '|', '~', '!', '\\', '\n', ' ', 'a', 'h', 'http://x', 'javascript:', '```', '1.', '    ', '\t', '"', '<script>'];
  let seed = 42;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  for (let i = 0; i < 2000; i++) {
    let s = '';
    const len = rand(80);
    for (let k = 0; k < len; k++) s += alphabet[rand(alphabet.length)];
    const r = render(s);
    assertInert(r);
    textOf(parse(s));
  }
});

// ---- highlighter ------------------------------------------------------------

test('highlight keeps the text and marks tokens', () => {
  const code = 'func main() {\n\t// say hi\n\tfmt.Println("hi", 42)\n}\n/* unclosed';
  const tokens = highlight(code, 'go');
  assert.equal(tokens.map((t) => t.text).join(''), code);
  const by = (cls) => tokens.filter((t) => t.cls === cls).map((t) => t.text);
  assert.deepEqual(by('kw'), ['func']);
  assert.deepEqual(by('str'), ['"hi"']);
  assert.deepEqual(by('num'), ['42']);
  assert.deepEqual(by('com'), ['// say hi', '/* unclosed']);
  assert.deepEqual(highlight('# comment\nif "x"', 'sh').map((t) => t.cls), ['com', '', 'kw', '', 'str']);
  assert.deepEqual(highlight('{"a": 1, "true": true}', 'json').map((t) => t.cls), ['', 'str', '', 'num', '', 'str', '']);
  for (const s of ['$x = 1', '"unclosed\nnext', '`multi\nline`', '/* open', 'a // b', '--x']) {
    for (const lang of ['js', 'sh', 'sql', 'json', 'go']) assert.equal(highlight(s, lang).map((t) => t.text).join(''), s);
  }
  assert.deepEqual(highlight('<b>x</b>', 'html'), [{ cls: '', text: '<b>x</b>' }]);
  const big = 'x'.repeat(300000);
  assert.deepEqual(highlight(big, 'js'), [{ cls: '', text: big }]);
});
