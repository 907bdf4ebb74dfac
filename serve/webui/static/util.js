// util.js: DOM and formatting helpers shared by the page's modules.

/** $ returns the first element matching sel. */
export const $ = (sel, root = document) => root.querySelector(sel);

/**
 * el creates an element. attrs: class, text (textContent), on<event>
 * (listeners), true (present), null/undefined/false (absent), anything
 * else an attribute. children: nodes or strings (text nodes), arrays
 * flattened, null and false skipped. Text is always set as text.
 */
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = String(v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(9)) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

/** setText sets an element's text when it differs (no needless mutation). */
export function setText(e, text) {
  text = String(text ?? '');
  if (e.textContent !== text) e.textContent = text;
}

/** money formats dollars as $0.0000. */
export const money = (usd) => (Number.isFinite(usd) ? '$' + usd.toFixed(4) : '—');

/** seconds formats milliseconds as "1.2 s", "42 s" or "3 min 4 s". */
export function seconds(ms) {
  if (!Number.isFinite(ms)) return '';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
  return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
}

/** clip shortens text to n characters with an ellipsis. */
export function clip(text, n) {
  text = String(text ?? '');
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}

/** pretty formats a JSON value with two-space indentation. */
export const pretty = (v) => JSON.stringify(v, null, 2) ?? String(v);

/** when formats an ISO time as a local time, with the date unless today. */
export function when(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (d.toDateString() === new Date().toDateString()) return time;
  return d.toLocaleDateString([], { month: 'short', day: 'numeric' }) + ' ' + time;
}

/** basename returns the last element of a path. */
export const basename = (path) => String(path || '').split('/').filter(Boolean).pop() || String(path || '');
