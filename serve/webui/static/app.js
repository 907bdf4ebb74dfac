// app.js: the page of `ccbridge serve` (docs/protocol/web.md).
//
// The sidebar lists the open web sessions and the session files, and
// starts new ones. The session on screen (its id in location.hash, #s=ID)
// has its conversation in #conversation, its model, mode, costs and
// context use in the header, its prompts in the dialogs and the composer
// below. Each session opened keeps its Session (session.js), and its
// event stream, while the page lives, shown or not.

import { api } from './api.js';
import { Session, tokens } from './session.js';
import { Dialogs } from './dialogs.js';
import { Composer, BUILTIN_COMMANDS } from './composer.js';
import { $, el, setText, money, clip, when, basename } from './util.js';

/**
 * The event streams kept open for sessions not on screen: a browser has
 * six connections to a server, and each stream holds one. Older ones are
 * closed, and resume after their last seq when their session is shown.
 */
const BACKGROUND_STREAMS = 2;

/** The models offered besides the session's own; #model takes any name. */
const MODELS = ['claude-opus-4-5', 'claude-sonnet-4-5', 'claude-haiku-4-5'];

/** app is the page's state; everything else lives in its sessions. */
const app = {
  info: null, // GET /api/web/info
  open: [], // the open sessions, from GET /api/web/sessions
  files: [], // the session files
  sessions: new Map(), // id → Session, for every session opened
  shown: null, // the Session on screen
  stick: true, // keep the conversation scrolled to its end
  dialogs: null,
  composer: null,
  timers: {},
};

const conversation = $('#conversation');

// ---- the session lists and the new-session form ------------------------

/** refreshList reloads the session lists. */
async function refreshList() {
  try {
    const data = await api('GET', '/api/web/sessions');
    app.open = data?.open || [];
    app.files = data?.files || [];
  } catch (err) {
    return toast('Cannot list the sessions: ' + err.message);
  }
  for (const info of app.open) if (app.sessions.has(info.id)) Object.assign(app.sessions.get(info.id).info, info);
  renderLists();
}

/** later runs fn once after ms, however often it is asked for meanwhile. */
function later(name, fn, ms) {
  clearTimeout(app.timers[name]);
  app.timers[name] = setTimeout(fn, ms);
}

function renderLists() {
  const none = (text) => el('li', { class: 'none', text });
  $('#sessions').replaceChildren(...app.open.map((info) => {
    const s = app.sessions.get(info.id);
    const ended = info.ended || s?.ended;
    return el('li', {
      class: 'session-item' + (app.shown?.id === info.id ? ' active' : '') + (ended ? ' ended' : ''),
      'data-id': info.id, tabindex: 0, role: 'button', title: info.cwd,
      onclick: () => show(info.id),
      onkeydown: (e) => e.key === 'Enter' && show(info.id),
    },
    el('div', { class: 'title', text: clip(info.title || `${info.mode} session`, 80) }),
    el('div', { class: 'sub', text: [basename(info.cwd), info.id, ended ? 'ended' : s?.running && 'running'].filter(Boolean).join(' · ') }));
  }), ...(app.open.length ? [] : [none('None yet.')]));
  $('#files').replaceChildren(...app.files.map((f) => el('li', { class: 'file-item', 'data-session-id': f.session_id, title: f.session_id },
    el('div', { class: 'title', text: clip(f.title || f.session_id, 80) }),
    el('div', { class: 'sub', text: basename(f.cwd) + ' · ' + when(f.modified || f.created) }),
    el('div', { class: 'buttons' }, ['resume', 'fork'].map((mode) => el('button', {
      type: 'button', class: mode, text: mode === 'fork' ? 'Fork' : 'Resume',
      onclick: () => start({ mode, cwd: f.cwd, session_id: f.session_id }),
    }))))), ...(app.files.length ? [] : [none('No session files.')]));
  fillOptions($('#new-session-id'), app.files.map((f) => [f.session_id, `${clip(f.title || f.session_id, 50)} — ${basename(f.cwd)} ${when(f.modified)}`]));
}

// fillOptions sets a select's options ([value, text] pairs), keeping its value.
function fillOptions(select, options) {
  if ([...select.options].map((o) => o.value + o.text).join() === options.map(([v, t]) => v + t).join()) return;
  const keep = select.value;
  select.replaceChildren(...options.map(([value, text]) => el('option', { value, text })));
  if (options.some(([v]) => v === keep)) select.value = keep;
}

/** start starts a web session (POST /api/web/sessions) and shows it. */
async function start(body) {
  setText($('#new-error'), '');
  try {
    const info = await api('POST', '/api/web/sessions', body);
    remember(info.cwd || body.cwd);
    app.open = [info, ...app.open.filter((o) => o.id !== info.id)];
    toggleNewForm(false);
    show(info.id);
    refreshList();
    $('#prompt').focus();
    return true;
  } catch (err) {
    const msg = 'Cannot start the session: ' + err.message;
    if ($('#new-form').hidden) toast(msg);
    else setText($('#new-error'), msg);
    return false;
  }
}

/** The localStorage key of the folder the last session was started in. */
const LAST_DIR = 'ccbridge.lastDir';

/** remember keeps dir as the folder chosen last. */
function remember(dir) {
  try {
    if (dir) localStorage.setItem(LAST_DIR, dir);
  } catch {} // (storage off: the first --dir it is)
}

/**
 * defaultDir is where a prompt typed with no session on screen starts one:
 * the folder chosen last, while serve still allows it (a --dir or below),
 * else the first --dir.
 */
function defaultDir() {
  const dirs = app.info?.dirs || [];
  let last = null;
  try {
    last = localStorage.getItem(LAST_DIR);
  } catch {}
  const allowed = (d) => dirs.some((x) => d === x || d.startsWith(x.replace(/\/+$/, '') + '/'));
  return last && allowed(last) ? last : dirs[0];
}

/**
 * startAndSend is the first minute's Send: with no session on screen, a
 * new one starts in defaultDir() and takes the message as its first.
 */
async function startAndSend(body) {
  const dir = defaultDir();
  if (!dir || !(await start({ mode: 'new', cwd: dir }))) return false;
  return post(body);
}

/** sendNow sends a message to the session on screen, or starts one for it. */
const sendNow = (body) => (app.shown ? post(body) : startAndSend(body));

/** queue holds a prompt until the shown session's running turn ends. */
function queue(body) {
  const s = app.shown;
  if (!s?.running) return sendNow(body);
  s.queued.push(body);
  updateAll();
  return true;
}

// sendQueued sends the first prompt a session holds once its turns are
// over; its echo starts a turn, whose end sends the next.
async function sendQueued(s) {
  if (s.running || s.ended || !s.queued.length || s.sendingQueued) return;
  s.sendingQueued = true;
  const body = s.queued.shift();
  try {
    await s.post(body);
  } catch (err) {
    s.queued.unshift(body);
    toast(`Queued prompt not sent: ${err.message}`);
  } finally {
    s.sendingQueued = false;
    if (s === app.shown) updateAll();
  }
}

function toggleNewForm(open = $('#new-form').hidden) {
  $('#new-form').hidden = !open;
  $('#new-session').setAttribute('aria-expanded', String(open));
  if (open) {
    fillOptions($('#new-dir'), (app.info?.dirs || []).map((d) => [d, d]));
    updateNewForm();
    $('#new-mode').focus();
  }
}

// updateNewForm dims the session choice unless the mode needs one.
function updateNewForm() {
  $('#new-session-row').classList.toggle('dim', !/^(resume|fork)$/.test($('#new-mode').value));
}

function startFromForm() {
  const mode = $('#new-mode').value;
  const body = { mode, cwd: $('#new-dir').value || undefined };
  if (mode === 'resume' || mode === 'fork') {
    body.session_id = $('#new-session-id').value;
    if (!body.session_id) return setText($('#new-error'), `Pick a session to ${mode}.`);
    // A session file belongs to its folder: resume it there.
    body.cwd = app.files.find((f) => f.session_id === body.session_id)?.cwd || body.cwd;
  }
  start(body);
}

// ---- the session on screen ---------------------------------------------

/** show puts the session id on screen (none for ''). */
function show(id) {
  let s = app.sessions.get(id) || null;
  if (id && !s) {
    s = new Session(app.open.find((o) => o.id === id) || { id }, onSessionChange);
    app.sessions.set(id, s);
  }
  if (s) {
    s.shownAt = Date.now();
    s.connect();
    if (!s.warmed && !s.ended) {
      // The CLI builds its file index on the first file_suggestions: ask
      // once now, so that the first @-mention finds files.
      s.warmed = true;
      s.query('file_suggestions', { text: '' }).catch(() => {});
    }
    [...app.sessions.values()].filter((x) => x.es && x !== s).sort((a, b) => b.shownAt - a.shownAt)
      .slice(BACKGROUND_STREAMS).forEach((x) => x.close());
  }
  app.shown = s;
  const hash = s ? '#s=' + encodeURIComponent(s.id) : '';
  if (location.hash !== hash) history.replaceState(null, '', hash || location.pathname);
  conversation.replaceChildren(...(s ? [s.root] : []));
  $('#empty').hidden = !!s;
  app.stick = true;
  app.dialogs.setSession(s);
  renderLists();
  setText($('#mcp-button'), 'MCP');
  if (!$('#mcp-panel').hidden) refreshMCP();
  updateAll();
}

/** hashId is the session id in location.hash (#s=ID). */
const hashId = () => decodeURIComponent(/^#s=(.+)$/.exec(location.hash)?.[1] || '');

// onSessionChange is every Session's notify: what changed in s.
function onSessionChange(s, what) {
  if (what === 'turn') {
    sendQueued(s);
    if (s === app.shown) later('context', () => refreshContext(app.shown), 300);
  }
  if (what === 'turn' || what === 'ended') {
    renderLists(); // running or not
    later('list', refreshList, 400); // new titles and session files
  }
  if (what === 'gone') {
    app.sessions.delete(s.id);
    if (app.shown === s) {
      toast(`Session ${s.id} is no longer on the server.`);
      show('');
    }
    return refreshList();
  }
  if (s !== app.shown) return;
  if (what === 'rewound' && s.prefill !== null) {
    $('#prompt').value ||= s.prefill; // the prompt this page's rewind dropped
    s.prefill = null;
  }
  if (what === 'requests') app.dialogs.update();
  if (what === 'seq' || what === 'render') updateTurn();
  else updateAll();
}

/** updateAll shows the state of the session on screen in the header and the composer. */
function updateAll() {
  const s = app.shown;
  const meta = s?.meta;
  setText($('#cwd'), meta?.cwd || s?.info.cwd || '');
  setText($('#session-id'), s ? 'session ' + (s.sessionId || '…') : '');
  updateModel(s);
  const mode = $('#permission-mode');
  mode.disabled = $('#end-session').disabled = !s || s.ended;
  if (meta?.permissionMode) {
    // A mode the select lacks (set elsewhere) is shown, not offered.
    if (![...mode.options].some((o) => o.value === meta.permissionMode)) {
      mode.append(el('option', { value: meta.permissionMode, text: meta.permissionMode, disabled: true }));
    }
    mode.value = meta.permissionMode;
  }
  setText($('#cost-turn'), money(s?.cost?.turn_cost_usd));
  setText($('#cost-total'), money(s?.cost?.total_cost_usd));
  setText($('#context-use'), contextUse(s));
  setText($('#context-usage'), contextUsage(s));
  $('#mcp-button').disabled = !s || s.ended;
  updateTurn();
}

// updateTurn sets #conversation's data-turn and data-seq, body's
// data-conn, the status line and the composer, and follows the end of the
// conversation.
function updateTurn() {
  const s = app.shown;
  const set = (e, k, v) => e.dataset[k] !== v && (e.dataset[k] = v);
  set(conversation, 'turn', s?.running ? 'running' : 'idle');
  set(conversation, 'seq', String(s?.lastSeq || 0));
  // Without a session on screen, "live" says that the server answers.
  set(document.body, 'conn', s ? s.conn : app.info ? 'live' : 'connecting');
  const status = s?.requests.size ? 'Waiting for your answer…' : s?.status || 'Working…';
  setText($('#status'), s?.ended ? 'This session has ended.' : s?.running ? status : '');
  // With no session on screen, a prompt starts one (startAndSend).
  app.composer.setState(s ? !s.ended : !!app.info?.dirs?.length, s?.running);
  const dir = !s && defaultDir();
  const hint = dir ? `Message Claude — starts a new session in ${basename(dir)}` : 'Message Claude — Enter sends, Shift+Enter for a new line, / for commands';
  if ($('#prompt').placeholder !== hint) $('#prompt').placeholder = hint;
  const q = s?.queued || [];
  $('#queued').hidden = !q.length;
  setText($('#queued'), q.length ? `${q.length} queued` : '');
  $('#queued').title = q.map((b) => b.text || '(attachments)').join('\n');
  if (app.stick) conversation.scrollTop = conversation.scrollHeight;
}

// updateModel shows the session's model in #model (a text field: any name
// goes) and offers it with the usual ones in #models.
function updateModel(s) {
  const input = $('#model');
  const current = s?.meta?.model || '';
  const names = [...new Set([current, ...MODELS].filter(Boolean))];
  if ($('#models').options[0]?.value !== names[0]) $('#models').replaceChildren(...names.map((value) => el('option', { value })));
  if (document.activeElement !== input) input.value = current;
  input.disabled = !s || s.ended;
}

/**
 * contextUse is "N / W tokens (p%)": the input, cache and output tokens
 * of the last turn that used any, against the model's context window.
 */
function contextUse(s) {
  const c = s?.usage;
  if (!c) return '';
  const n = tokens(c.usage);
  const models = c.modelUsage || {};
  const w = Number((models[s.meta?.model] || Object.values(models).find((m) => m?.contextWindow))?.contextWindow);
  if (!w) return `${n} tokens`;
  const p = (100 * n) / w;
  return `${n} / ${w} tokens (${p.toFixed(p < 10 ? 1 : 0)}%)`;
}

/** message is an inbound ipc prompt: user_message or steer. */
const message = (type, text, attachments) => ({ type, text: text || undefined, attachments: attachments.length ? attachments : undefined });

/** post sends a message to the session on screen; a failure shows in the status line. */
async function post(body) {
  try {
    await app.shown.post(body);
    return true;
  } catch (err) {
    toast(`Not sent (${body.type}): ${err.message}`);
    return false;
  }
}

// changeModel asks for the model typed or picked in #model.
function changeModel() {
  const model = $('#model').value.trim();
  if (model && model !== app.shown?.meta?.model) post({ type: 'model_change', model });
}

/** toast shows a message in the status line for a while. */
function toast(message) {
  setText($('#toast'), message);
  later('toast', () => setText($('#toast'), ''), 8000);
}

const on0 = (sel, type, fn) => $(sel).addEventListener(type, fn);

// ---- the CLI's MCP servers and context use ----------------------------

/** toggleMCP opens (and fills) or closes the MCP panel. */
function toggleMCP(open = $('#mcp-panel').hidden) {
  $('#mcp-panel').hidden = !open;
  if (open) refreshMCP();
}

/** refreshMCP lists the MCP servers of the session on screen (mcp_status), failed ones with their error. */
async function refreshMCP() {
  const s = app.shown;
  const list = $('#mcp-servers');
  if (!s || s.ended) return list.replaceChildren(el('li', { class: 'none', text: 'No live session.' }));
  let r;
  try {
    r = await s.query('mcp_status', {});
  } catch (err) {
    return toast('Cannot ask for the MCP servers: ' + err.message);
  }
  if (s !== app.shown) return;
  if (!r.ok) return list.replaceChildren(el('li', { class: 'none', text: 'MCP status unavailable: ' + r.error }));
  const servers = r.result?.mcpServers || [];
  const failed = servers.filter((x) => x.status === 'failed').length;
  setText($('#mcp-button'), failed ? `MCP (${failed} failed)` : 'MCP');
  list.replaceChildren(...servers.map((x) => el('li', { class: 'mcp-server', 'data-name': x.name, 'data-status': x.status },
    el('div', { class: 'title' }, el('b', { text: x.name }), ' ', el('span', { class: 'mcp-status', text: x.status })),
    x.error ? el('div', { class: 'sub mcp-error', text: x.error }) : null,
    el('div', { class: 'sub', text: [x.transport, x.scope, x.tools ? `${x.tools.length} tools` : ''].filter(Boolean).join(' · ') }),
    el('div', { class: 'buttons' },
      x.status !== 'disabled' && el('button', { type: 'button', class: 'mcp-reconnect', text: 'Reconnect', onclick: () => mcpAction('mcp_reconnect', { server: x.name }) }),
      el('button', {
        type: 'button', class: 'mcp-toggle', text: x.status === 'disabled' ? 'Enable' : 'Disable',
        onclick: () => mcpAction('mcp_toggle', { server: x.name, enabled: x.status === 'disabled' }),
      })))),
  ...(servers.length ? [] : [el('li', { class: 'none', text: 'No MCP servers.' })]));
}

/** mcpAction reconnects or toggles a server, then lists the servers again. */
async function mcpAction(name, params) {
  try {
    const r = await app.shown.query(name, params);
    if (!r.ok) toast(`${params.server}: ${r.error}`);
  } catch (err) {
    toast('Not sent: ' + err.message);
  }
  refreshMCP();
}

/** refreshContext shows the CLI's own count of the context (get_context_usage) in #context-usage. */
async function refreshContext(s) {
  if (!s || s.ended || s.running) return;
  let r;
  try {
    r = await s.query('context_usage', {});
  } catch {
    return;
  }
  if (!r.ok) return;
  s.contextUsage = r.result;
  if (s === app.shown) updateAll();
}

/** contextUsage is "context N / W (p%)" of the CLI's get_context_usage answer. */
function contextUsage(s) {
  const c = s?.contextUsage;
  if (!c || !Number.isFinite(c.totalTokens)) return '';
  return `context ${c.totalTokens} / ${c.maxTokens} (${c.percentage}%)`;
}

async function init() {
  app.dialogs = new Dialogs((err) => toast('Answer not sent: ' + err.message));
  app.composer = new Composer({
    send: (text, attachments) => sendNow(message('user_message', text, attachments)),
    steer: (text, attachments) => post(message('steer', text, attachments)),
    queue: (text, attachments) => queue(message('user_message', text, attachments)),
    interrupt: () => post({ type: 'interrupt' }),
    commands: () => {
      const list = (app.shown?.meta?.slash_commands || []).map((c) => String(c?.name ?? c).replace(/^\//, ''));
      return list.length ? list : BUILTIN_COMMANDS;
    },
    files: async (query) => {
      const r = await app.shown?.query('file_suggestions', { text: query });
      return r?.ok ? (r.result?.suggestions || []).map((x) => x.path).filter(Boolean) : [];
    },
    error: toast,
  });
  on0('#mcp-button', 'click', () => toggleMCP());
  on0('#mcp-close', 'click', () => toggleMCP(false));
  on0('#mcp-refresh', 'click', () => refreshMCP());
  const on = (sel, type, fn) => $(sel).addEventListener(type, fn);
  on('#new-session', 'click', () => toggleNewForm());
  on('#new-cancel', 'click', () => toggleNewForm(false));
  on('#new-mode', 'change', updateNewForm);
  on('#new-start', 'click', startFromForm);
  on('#new-session-id', 'change', () => {
    const f = app.files.find((x) => x.session_id === $('#new-session-id').value);
    if (app.info?.dirs?.includes(f?.cwd)) $('#new-dir').value = f.cwd;
  });
  on('#model', 'change', changeModel);
  // A name picked from the list is taken at once, a typed one on Enter or blur.
  on('#model', 'input', (e) => (e.inputType === 'insertReplacementText' || !e.inputType) && changeModel());
  on('#permission-mode', 'change', (e) => post({ type: 'permission_mode', mode: e.target.value }));
  on('#end-session', 'click', () => {
    api('DELETE', `/api/web/sessions/${encodeURIComponent(app.shown.id)}`).catch((err) => toast('Cannot end the session: ' + err.message));
  });
  on('#conversation', 'scroll', () => {
    app.stick = conversation.scrollTop + conversation.clientHeight >= conversation.scrollHeight - 40;
  });
  window.addEventListener('hashchange', () => hashId() !== (app.shown?.id || '') && show(hashId()));
  window.addEventListener('focus', () => later('list', refreshList, 400));

  try {
    app.info = await api('GET', '/api/web/info');
    setText($('#version'), app.info?.version);
  } catch (err) {
    toast('Cannot reach ccbridge: ' + err.message);
  }
  await refreshList();
  show(hashId());
}

init();
