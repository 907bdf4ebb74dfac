// session.js: one web session: its event stream, its state and its
// conversation.
//
// A Session reads /api/web/sessions/{id}/events with an EventSource and
// applies each ipc line to its conversation (this.root, which the app
// shows while the session is on screen). A line whose seq is not above
// the last one applied is skipped, so a reconnect shows nothing twice.
// The app hears of every change through notify(session, what).

import { api } from './api.js';
import { el } from './util.js';
import * as R from './render.js';

/** tokens adds up a usage's input, cache and output tokens. */
export function tokens(u) {
  return ['input_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'output_tokens']
    .reduce((sum, k) => sum + (Number(u?.[k]) || 0), 0);
}

export class Session {
  /**
   * @param {object} info the session's object from GET /api/web/sessions
   * @param {(s: Session, what: string) => void} notify
   */
  constructor(info, notify) {
    this.id = info.id;
    this.info = info;
    this.notify = notify;
    this.root = el('div', { class: 'conv' });
    this.lastSeq = 0;
    this.prompts = 0; // user_message echoes (not those of a session file)
    this.terminals = 0; // terminal messages: one per prompt
    this.steers = []; // the elements of the steers echoed and not yet taken, oldest first
    this.queued = []; // user_messages held by the page until the turn ends (Queue)
    this.sessionId = info.session_id || null;
    this.meta = null; // the last system_metadata
    this.cost = null; // the last cost_update
    this.usage = null; // the last cost_update that used tokens (not /cost)
    this.turnCost = null; // the cost_update not yet shown on a turn's end
    this.requests = new Map(); // open control_request_forward by request_id
    this.dismissed = null; // request_id of a prompt closed with Escape
    this.blocks = new Map(); // text blocks by kind, msg_id and block_index
    this.tools = new Map(); // tool elements by tool_use_id
    this.status = '';
    this.ended = !!info.ended;
    this.done = false; // session_ended applied: the stream has nothing more
    this.shownAt = 0; // when the app last showed the session
    this.gone = false; // the server no longer has the session
    this.conn = 'connecting'; // body[data-conn] while shown
    this.es = null;
    this.retries = 0;
    this.dirty = new Set(); // blocks streamed into since the last frame
    this.frame = 0;
    this.inHistory = false; // applying the lines of a session file
    this.queries = new Map(); // the resolve of each query this page asked, by id
    this.nextQuery = 0;
    this.rw = null; // {turns, node, panel}: the rewind this page asked for
    this.prefill = null; // the prompt it dropped, for the composer
    this.root.addEventListener('click', (e) => {
      const c = e.target.closest?.('button')?.classList;
      if (c?.contains('rewind')) this.askRewind(e.target.closest('.msg.user'));
      else if (c?.contains('rewind-go')) this.rewind(false);
      else if (c?.contains('rewind-cancel')) this.cancelRewind();
    });
  }

  /** promptNodes are the prompts shown (a rewind counts turns by them). */
  promptNodes() {
    return [...this.root.children].filter((n) => n.classList.contains('user'));
  }

  // askRewind asks for the dry run of a rewind to before the prompt node.
  askRewind(node) {
    const all = this.promptNodes(), i = all.indexOf(node);
    if (i < 0 || this.running || this.ended) return;
    this.cancelRewind();
    this.rw = { turns: all.length - i, node };
    this.rewind(true);
  }

  rewind(dry) {
    const r = this.rw;
    if (!r) return;
    r.panel?.remove();
    r.panel = null;
    if (!dry) this.prefill = r.node.querySelector('.text')?.textContent ?? '';
    this.post({ type: 'rewind', turns: r.turns, files: true, dry_run: dry }).catch((err) => {
      this.add(R.errorLine({ code: 'not_sent', message: 'rewind: ' + err.message }));
      this.rw = null;
    });
  }

  cancelRewind() {
    this.rw?.panel?.remove();
    this.rw = null;
  }

  /** running: a prompt was echoed and its turn has not ended. */
  get running() {
    return this.prompts > this.terminals;
  }

  /** connect opens the event stream: from the start, or after the last seq applied. */
  connect() {
    if (this.es || this.gone || this.done) return;
    const url = `/api/web/sessions/${encodeURIComponent(this.id)}/events`;
    const es = (this.es = new EventSource(this.lastSeq ? `${url}?after=${this.lastSeq}` : url));
    this.setConn(this.lastSeq ? 'reconnecting' : 'connecting');
    es.onopen = () => {
      this.retries = 0;
      this.setConn('live');
    };
    es.onmessage = (ev) => this.receive(ev);
    es.onerror = () => {
      this.setConn('reconnecting');
      if (es.readyState !== EventSource.CLOSED) return; // it retries with Last-Event-ID
      // The server refused the stream (401, 404…): find out why, then retry.
      this.close();
      setTimeout(() => this.probe(), Math.min(1000 * 2 ** this.retries++, 15000));
    };
  }

  // probe asks for the session list (which brings up the token form on
  // 401) and reconnects while the session is still there.
  async probe() {
    const list = await api('GET', '/api/web/sessions').catch(() => null);
    if (list && !list.open?.some((o) => o.id === this.id)) {
      this.gone = true;
      this.notify(this, 'gone');
      return;
    }
    this.connect();
  }

  close() {
    this.es?.close();
    this.es = null;
  }

  setConn(conn) {
    if (this.conn === conn) return;
    this.conn = conn;
    this.notify(this, 'conn');
  }

  // receive applies one event unless its seq was applied before. A
  // stream_stale has no seq (the event keeps the last id), so it always is.
  receive(ev) {
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      return;
    }
    if (!msg || typeof msg !== 'object') return;
    const seq = Number(ev.lastEventId);
    if (seq && msg.type !== 'stream_stale') {
      if (seq <= this.lastSeq) return;
      this.lastSeq = seq;
    }
    this.apply(msg);
    this.notify(this, 'seq');
  }

  /** post sends an inbound ipc message to the session. */
  post(body) {
    return api('POST', `/api/web/sessions/${encodeURIComponent(this.id)}/messages`, body);
  }

  /**
   * query asks the CLI through an ipc query (name: file_suggestions,
   * context_usage, mcp_status, mcp_reconnect, mcp_toggle, session_title)
   * and resolves with its query_result, which comes on the stream.
   */
  query(name, params) {
    const id = `q${++this.nextQuery}-${Date.now().toString(36)}`;
    return new Promise((resolve, reject) => {
      this.queries.set(id, resolve);
      this.post({ type: 'query', id, query: name, ...params }).then((r) => {
        if (r?.ended) {
          // The session ended first: no query_result will come.
          this.queries.delete(id);
          reject(new Error('the session has ended'));
        }
      }, (err) => {
        this.queries.delete(id);
        reject(err);
      });
    });
  }

  /** answer sends body for the open request id, which leaves the queue (and comes back if not sent). */
  async answer(id, body) {
    const req = this.requests.get(id);
    this.requests.delete(id);
    this.notify(this, 'requests');
    try {
      await this.post({ ...body, request_id: id });
    } catch (err) {
      if (req && err.status === 0) {
        this.requests.set(id, req);
        this.notify(this, 'requests');
      }
      throw err;
    }
  }

  // add appends node to the conversation, or inside the .tool-children of
  // the Agent call parentId when that call is known.
  add(node, parentId) {
    const parent = parentId && this.tools.get(parentId);
    (parent ? R.slot(parent, 'tool-children') : this.root).appendChild(node);
    return node;
  }

  // tool returns the element of a tool call, creating it when it was not announced.
  tool(id, name, parentId) {
    let t = this.tools.get(id);
    if (!t) {
      this.tools.set(id, (t = this.add(R.toolElement(id, name), parentId)));
      R.setToolInput(t, name, {});
    }
    return t;
  }

  /** apply renders one ipc line. Unknown types are ignored. */
  apply(msg) {
    if (!!msg.history !== this.inHistory) {
      // A resumed session's stream begins with its file's conversation.
      this.inHistory = !!msg.history;
      this.add(R.note(this.inHistory ? 'Earlier conversation, from the session file' : 'This session starts here', 'divider'));
    }
    const tool = this.tools.get(msg.tool_use_id);
    switch (msg.type) {
      case 'session_init':
      case 'system_metadata':
        if (msg.type === 'system_metadata') this.meta = msg;
        this.sessionId = msg.session_id || this.sessionId;
        this.notify(this, 'meta');
        break;
      case 'user_message':
        if (!msg.history) this.prompts++; // a prompt of the file has no turn end
        this.add(R.userMessage(msg));
        this.notify(this, 'turn');
        break;
      case 'steer': {
        // Text added to the running turn: the CLI takes it after the
        // turn's next tool call (steer_taken), or, when none follows, runs
        // it as a turn of its own once the turn ends.
        const node = this.add(R.userMessage(msg, 'steer'));
        if (!msg.history) this.steers.push(node);
        break;
      }
      case 'steer_taken':
        this.steers.shift()?.classList.add('taken');
        break;
      case 'assistant_text':
      case 'thinking_text':
        this.text(msg);
        break;
      case 'tool_use': {
        const t = this.tool(msg.tool_use_id, msg.tool_name, msg.parent_tool_use_id);
        R.setToolInput(t, msg.tool_name, msg.input);
        t.classList.toggle('partial', !!msg.is_partial && (!tool || t.classList.contains('partial')));
        break;
      }
      case 'tool_result':
        R.toolResult(this.tool(msg.tool_use_id, msg.tool_name, msg.parent_tool_use_id), msg);
        break;
      case 'tool_use_structured': {
        const d = R.diff(msg.structured_result);
        if (d) R.slot(this.tool(msg.tool_use_id, msg.tool_name, msg.parent_tool_use_id), 'diff').replaceWith(d);
        break;
      }
      case 'control_request_forward':
        this.requests.set(msg.request_id, msg);
        if (tool) R.setToolState(tool, 'awaiting approval', 'awaiting');
        this.notify(this, 'requests');
        break;
      case 'control_request_cancelled':
        this.settle(msg.request_id, `prompt withdrawn (${msg.reason})`);
        break;
      case 'tool_approval': // an answer the session took (echoed): from
      case 'question_answer': // this page before a reload, or another one
        this.settle(msg.request_id, msg.decision === 'deny' ? 'denied' : 'answered');
        break;
      case 'cost_update':
        this.cost = this.turnCost = msg;
        if (tokens(msg.usage) > 0) this.usage = msg;
        this.notify(this, 'cost');
        break;
      case 'query_result': { // (one of another page, or replayed: no resolve here)
        const resolve = this.queries.get(msg.id);
        this.queries.delete(msg.id);
        resolve?.(msg);
        break;
      }
      case 'turn_complete':
      case 'turn_cancelled':
        if (!msg.parent_tool_use_id) this.terminal(msg); // (a subagent's is no prompt's)
        break;
      case 'error':
        this.add(R.errorLine(msg));
        if (msg.recoverable === false) this.terminal(msg);
        break;
      case 'status':
        this.status = msg.state === 'compacted' ? '' : R.statusText(msg);
        if (tool && msg.state === 'tool_running') R.setToolState(tool, `running ${msg.elapsed_time_seconds} s`);
        this.notify(this, 'status');
        break;
      case 'task_update':
        if (tool) R.slot(tool, 'tool-task').textContent = R.taskText(msg);
        break;
      case 'compact_boundary':
        this.add(R.note(`Conversation compacted (${msg.trigger}` +
          (msg.pre_tokens !== undefined ? `, ${msg.pre_tokens} → ${msg.post_tokens ?? '?'} tokens)` : ')'), 'divider'));
        break;
      case 'session_ended':
        this.ended = this.done = true;
        this.close();
        this.setConn('live');
        this.requests.clear();
        this.add(R.note(`Session ended (exit code ${msg.exit_code})` + (msg.error ? ': ' + msg.error : ''), 'ended'));
        this.notify(this, 'ended');
        break;
      case 'rewind_result': {
        // Only the dry run this page asked for opens its panel.
        const r = this.rw, all = this.promptNodes(), from = all[all.length - msg.turns];
        if (msg.dry_run) {
          if (r && !r.panel && r.turns === msg.turns && r.node.isConnected) r.node.after((r.panel = R.rewindConfirm(msg)));
          break;
        }
        this.rw = null;
        if (from) {
          while (from.nextSibling) from.nextSibling.remove();
          from.replaceWith(R.note(`Rewound ${msg.turns} turn(s)`, 'divider rewound'));
        }
        this.notify(this, 'rewound');
        break;
      }
      case 'stream_stale':
        this.add(R.note(`Older lines are no longer kept: the conversation goes on after line ${msg.resume_after}.`, 'stale'));
        break;
    }
  }

  // text applies assistant_text or thinking_text: a partial line appends
  // its delta to the block (rendered at the next animation frame), the
  // complete line replaces the block's text (rendered at once).
  text(msg) {
    const kind = msg.type === 'thinking_text' ? 'thinking' : 'assistant';
    const key = `${kind}\n${msg.msg_id}\n${msg.block_index ?? msg.source}`;
    let b = this.blocks.get(key);
    if (!b) {
      this.blocks.set(key, (b = { ...R.textBlock(kind, msg), text: '', mono: msg.source === 'slash_command' }));
      this.add(b.el, msg.parent_tool_use_id);
    }
    b.el.classList.toggle('error', !!msg.is_error);
    b.el.classList.toggle('aborted', msg.status === 'aborted');
    if (msg.is_partial) {
      b.text += msg.text ?? '';
      this.dirty.add(b);
      this.frame ||= requestAnimationFrame(() => this.flush());
      return;
    }
    b.text = msg.text ?? '';
    this.dirty.delete(b);
    R.renderText(b);
  }

  // flush renders the blocks streamed into since the last frame.
  flush() {
    this.frame = 0;
    this.dirty.forEach(R.renderText);
    this.dirty.clear();
    this.notify(this, 'render');
  }

  // terminal applies a prompt's one terminal message.
  // settle drops an open request (answered or withdrawn): its dialog
  // closes, and its tool says why if it still waits.
  settle(id, why) {
    const req = this.requests.get(id);
    if (!req) return;
    this.requests.delete(id);
    const t = this.tools.get(req.tool_use_id);
    if (t?.classList.contains('awaiting')) R.setToolState(t, why);
    this.notify(this, 'requests');
  }

  terminal(msg) {
    this.terminals++;
    // The steers the turn did not take run as turns of their own.
    this.prompts += this.steers.length;
    this.steers.forEach((n) => n.classList.add('own-turn'));
    this.steers = [];
    this.add(R.turnEnd(msg, this.turnCost));
    this.turnCost = null;
    if (!this.running) this.status = '';
    this.notify(this, 'turn');
  }
}
