// render.js: DOM builders for the items of a conversation, from ipc lines
// (docs/protocol/ipc.md). Every text is set as text (el() or md.js).

import { el, clip, money, pretty, seconds } from './util.js';
import { build, parse } from './md.js';

/** The most characters of a tool's output shown. */
const MAX_OUTPUT = 100000;

// image is an <img> of base64 data of an image type the page shows, or null.
function image(type, data, alt) {
  if (!/^image\/(png|jpeg|gif|webp)$/.test(type) || typeof data !== 'string') return null;
  return el('img', { class: 'thumb', alt, src: `data:${type};base64,${data.replace(/\s/g, '')}` });
}

/** userMessage renders a user_message (or, with kind 'steer', a steer) echo: its text and its attachments. */
export function userMessage(msg, kind) {
  const atts = Array.isArray(msg.attachments) ? msg.attachments : [];
  return el('div', { class: kind ? `msg user ${kind}` : 'msg user' },
    kind ? null : el('button', { type: 'button', class: 'rewind', title: 'Rewind to before this prompt' }),
    msg.text ? el('div', { class: 'text', text: msg.text }) : null,
    atts.length ? el('div', { class: 'thumbs' }, atts.map((a) => image(a?.media_type, a?.content, 'attached image') ||
      el('span', { class: 'chip', text: a?.name || a?.kind || 'attachment' }))) : null);
}

/** textBlock creates an assistant or thinking block: {el, md}. */
export function textBlock(kind, msg) {
  const md = el('div', { class: 'md' });
  if (kind === 'thinking') {
    return { el: el('details', { class: 'msg thinking' }, el('summary', { text: msg.redacted ? 'Thinking (redacted)' : 'Thinking' }), md), md };
  }
  const slash = msg.source === 'slash_command';
  return { el: el('div', { class: slash ? 'msg assistant slash' : 'msg assistant', 'data-msg-id': msg.msg_id, 'data-block': msg.block_index }, md), md };
}

/** renderText shows a block's text: Markdown, or as it is for a slash command's output. */
export function renderText(block) {
  block.md.replaceChildren(block.mono ? el('pre', { text: block.text }) : build(parse(block.text)));
}

/** mainArg is the one-line summary of a tool's input. */
export function mainArg(input) {
  if (!input || typeof input !== 'object') return '';
  if (Array.isArray(input.questions)) return input.questions.map((q) => q?.question).join(' · ');
  for (const k of ['file_path', 'notebook_path', 'command', 'pattern', 'url', 'query', 'description', 'path', 'prompt', 'skill']) {
    if (input[k] && typeof input[k] === 'string') {
      return clip(input[k].replace(/\s+/g, ' '), 200) + (input.subagent_type ? ` (${input.subagent_type})` : '');
    }
  }
  return '';
}

// ORDER is the order of a tool's parts, which slot() keeps.
const ORDER = ['tool-head', 'tool-input', 'tool-task', 'tool-children', 'diff', 'tool-result'];

/** toolElement creates the element of a tool call. */
export function toolElement(id, name) {
  return el('div', { class: 'tool', 'data-tool-use-id': id, 'data-tool-name': name || '' },
    el('div', { class: 'tool-head' },
      el('span', { class: 'tool-name', text: name || 'tool' }), ' ',
      el('span', { class: 'tool-arg' }), ' ',
      el('span', { class: 'tool-state' })),
    el('details', { class: 'tool-input' }, el('summary', { text: 'input' }), el('pre')));
}

/** slot returns a tool's part of class cls, creating it in its place. */
export function slot(tool, cls, tag = 'div') {
  const rank = (e) => ORDER.findIndex((c) => e.classList.contains(c));
  const part = tool.querySelector(':scope > .' + cls);
  if (part) return part;
  const next = [...tool.children].find((c) => rank(c) > ORDER.indexOf(cls));
  return tool.insertBefore(el(tag, { class: cls }), next || null);
}

/** setToolInput shows a tool's name, summary and input. */
export function setToolInput(tool, name, input) {
  if (name) {
    tool.setAttribute('data-tool-name', name);
    tool.querySelector('.tool-name').textContent = name;
  }
  tool.querySelector('.tool-arg').textContent = mainArg(input);
  tool.querySelector('.tool-input pre').textContent = pretty(input ?? {});
}

/** setToolState shows a short state after the tool's summary, and a class. */
export function setToolState(tool, state, cls) {
  tool.querySelector('.tool-state').textContent = state;
  tool.classList.remove('awaiting', 'done', 'failed');
  if (cls) tool.classList.add(cls);
}

/** toolResult fills a tool's .tool-result: its output (open when short or an error) and images. */
export function toolResult(tool, msg) {
  const part = slot(tool, 'tool-result', 'details');
  const out = typeof msg.output === 'string' ? msg.output : pretty(msg.output);
  part.classList.toggle('error', !!msg.is_error);
  part.open = !!msg.is_error || (out.split('\n', 13).length <= 12 && out.length <= 1500);
  const images = (Array.isArray(msg.content) ? msg.content : [])
    .map((b) => b?.type === 'image' && image(b.source?.media_type, b.source?.data, 'tool image')).filter(Boolean);
  part.replaceChildren(...[
    el('summary', {}, msg.is_error ? 'error' : 'result',
      el('span', { class: 'preview', text: out ? ': ' + clip(out.trim().split('\n', 1)[0], 120) : ' (empty)' })),
    out && el('pre', { text: out.slice(0, MAX_OUTPUT) }),
    out.length > MAX_OUTPUT && note(`… ${out.length - MAX_OUTPUT} more characters not shown`),
    images.length && el('div', { class: 'thumbs' }, images),
  ].filter(Boolean));
  setToolState(tool, msg.is_error ? 'failed' : '', msg.is_error ? 'failed' : 'done');
}

/**
 * diff renders the structured result of Edit, Write or MultiEdit as a
 * diff of its structuredPatch (a created file: every line of its content
 * added), or returns null.
 */
export function diff(result) {
  let hunks = Array.isArray(result?.structuredPatch) ? result.structuredPatch : [];
  if (!hunks.length && result?.type === 'create' && typeof result.content === 'string') {
    const lines = result.content.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    hunks = [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: lines.length, lines: lines.map((l) => '+' + l) }];
  }
  if (!hunks.length) return null;
  return el('div', { class: 'diff' },
    result.filePath && el('div', { class: 'diff-file', text: (result.type === 'create' ? 'created ' : '') + result.filePath }),
    hunks.map((h) => [
      el('div', { class: 'diff-hunk', text: `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@` }),
      (Array.isArray(h.lines) ? h.lines : []).map((line) => {
        const s = String(line);
        const cls = { '+': 'diff-add', '-': 'diff-del', ' ': 'diff-ctx' }[s[0]];
        return el('div', { class: 'diff-line ' + (cls || 'diff-ctx'), text: cls ? s.slice(1) : s });
      }),
    ]));
}

/** taskText is the one-line view of a task_update. */
export function taskText(msg) {
  const u = msg.usage || {};
  const parts = [msg.status || msg.event, msg.last_tool_name && 'last tool: ' + msg.last_tool_name,
    u.tool_uses !== undefined && u.tool_uses + (u.tool_uses === 1 ? ' tool use' : ' tool uses'), seconds(u.duration_ms)];
  const what = msg.summary || msg.description;
  return (what ? clip(what, 160) + ' — ' : '') + parts.filter(Boolean).join(', ');
}

/**
 * turnEnd renders a prompt's terminal message (turn_complete,
 * turn_cancelled, or error with recoverable false) with the turn's cost.
 */
export function turnEnd(msg, cost) {
  const kind = { turn_complete: 'complete', turn_cancelled: 'cancelled' }[msg.type] || 'error';
  const label = kind === 'complete' ? (msg.result_class || msg.subtype) + (msg.local_command ? ` (/${msg.local_command})` : '')
    : kind === 'cancelled' ? `interrupted (${msg.reason})` : 'error: ' + msg.code;
  const bits = [label, msg.merged && 'merged into the turn above'];
  if (cost) bits.push(money(cost.turn_cost_usd), seconds(cost.duration_ms), cost.num_turns && cost.num_turns + (cost.num_turns === 1 ? ' request' : ' requests'));
  const problems = kind === 'error' ? [msg.message]
    : msg.is_error && kind === 'complete' ? [msg.api_error?.message, ...(Array.isArray(msg.errors) ? msg.errors : [])] : [];
  return el('div', { class: 'turn-end', 'data-kind': kind, 'data-class': msg.result_class || '' },
    el('span', { text: bits.filter(Boolean).join(' · ') }),
    problems.some(Boolean) && el('div', { class: 'turn-end-errors', text: problems.filter(Boolean).join('\n') }));
}

/** errorLine renders an error line: its code, message and the CLI's stderr. */
export function errorLine(msg) {
  return el('div', { class: 'error-line', 'data-code': msg.code },
    el('span', { class: 'code', text: msg.code || 'error' }), ' ', msg.message || '',
    msg.stderr && el('details', {}, el('summary', { text: 'stderr' }), el('pre', { text: msg.stderr })));
}

/** statusText is the status line for a status message. */
export function statusText(msg) {
  switch (msg.state) {
    case 'requesting': return 'Waiting for the model…';
    case 'compacting': return 'Compacting the conversation…';
    case 'api_retry': return `API error ${msg.error_status} ${msg.error}; retry ${msg.attempt}/${msg.max_retries} in ${seconds(msg.retry_delay_ms)}`;
    case 'tool_running': return `${msg.tool_name} running for ${msg.elapsed_time_seconds} s…`;
    default: return String(msg.state ?? '');
  }
}

/** rewindConfirm shows a rewind's dry run: what it drops and restores, and its buttons. */
export function rewindConfirm(msg) {
  const files = msg.files || [];
  return el('div', { class: 'rewind-confirm' },
    el('div', { text: `Rewind ${msg.turns} turn(s)? ` + (files.length ? 'Files restored:' : 'No file changes back.') }),
    el('ul', { class: 'rewind-files' }, files.map((f) => el('li', { text: f }))),
    el('button', { type: 'button', class: 'rewind-go', text: 'Rewind' }), ' ',
    el('button', { type: 'button', class: 'rewind-cancel', text: 'Cancel' }));
}

/** note renders a small line of information in the conversation. */
export const note = (text, cls = '') => el('div', { class: 'note ' + cls, text });
