// hl.js: a tiny highlighter for fenced code blocks. highlight(text, lang)
// splits text into tokens {cls, text}, cls one of 'kw', 'str', 'com',
// 'num' or '' (plain), in one linear scan; md.js makes the tokens
// <span class="hl-…"> elements with textContent.

const KEYWORDS = new Set(('async await break case catch class const continue def default defer do elif else ' +
  'enum except export extends false fi finally fn for from func function go if impl import in interface ' +
  'lambda let match mut new nil None null package pass pub raise return self static struct switch then ' +
  'this throw trait true True False try type typeof use var while with yield').split(' '));

// Languages whose comments start with '#', or with '--'; the others get // and /* */.
const HASH = /^(sh|bash|zsh|shell|console|python|py|ruby|rb|ya?ml|toml|perl|r|make(file)?|dockerfile|conf|ini)$/;
const DASH = /^(sql|lua|haskell|hs)$/;
// Languages left plain, and the largest block highlighted.
const PLAIN = /^(|text|txt|plain|diff|md|markdown|html|xml|csv)$/;
const MAX = 200000;

/** highlight returns the tokens of text as code in lang. */
export function highlight(text, lang) {
  text = String(text ?? '');
  if (PLAIN.test(lang) || text.length > MAX) return [{ cls: '', text }];
  const line = HASH.test(lang) ? '#' : DASH.test(lang) ? '--' : lang === 'json' ? null : '//';
  const out = [];
  let plain = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    let end = i, cls = '';
    if (line && text.startsWith(line, i)) {
      end = text.indexOf('\n', i);
      cls = 'com';
    } else if (line === '//' && text.startsWith('/*', i)) {
      end = text.indexOf('*/', i + 2);
      end = end < 0 ? -1 : end + 2;
      cls = 'com';
    } else if (c === '"' || c === "'" || c === '`') {
      end = stringEnd(text, i);
      cls = 'str';
    } else if (isIdent(c) && !isIdent(text[i - 1])) {
      const num = c >= '0' && c <= '9';
      while (isIdent(text[end]) || (num && text[end] === '.')) end++;
      cls = num ? 'num' : KEYWORDS.has(text.slice(i, end)) && lang !== 'json' ? 'kw' : '';
    }
    if (end < 0) end = text.length;
    if (end === i) end++;
    if (cls) {
      if (plain) out.push({ cls: '', text: plain });
      out.push({ cls, text: text.slice(i, end) });
      plain = '';
    } else {
      plain += text.slice(i, end);
    }
    i = end;
  }
  if (plain) out.push({ cls: '', text: plain });
  return out;
}

// stringEnd returns the end of the string literal opened at i: after its
// closing quote, or at the end of the line for an unclosed one (a
// backtick string may span lines).
function stringEnd(text, i) {
  let j = i + 1;
  for (; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === text[i]) return j + 1;
    else if (text[j] === '\n' && text[i] !== '`') return j;
  }
  return j;
}

// isIdent tells whether c may be in an identifier or a number ($ and _ too).
function isIdent(c) {
  return c !== undefined && /[\w$]/.test(c);
}
