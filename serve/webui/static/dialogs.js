// dialogs.js: the permission prompt (dialog#permission) and the question
// form (dialog#question) of the session on screen.
//
// A session's open requests (control_request_forward) wait in its queue
// and are shown one at a time, the oldest first. A request the CLI
// withdraws (control_request_cancelled) leaves the queue, which closes
// its dialog. Escape closes a dialog without answering: the request stays
// open, and the chip #pending shows it again.

import { $, el, pretty } from './util.js';
import { build, parse } from './md.js';

export class Dialogs {
  /** @param {(err: Error) => void} onError shows an answer that failed */
  constructor(onError) {
    this.onError = onError;
    this.session = null;
    this.current = null; // the request shown
    this.dialogs = [$('#permission'), $('#question')];
    this.chip = $('#pending');
    for (const d of this.dialogs) {
      d.addEventListener('cancel', () => {
        this.session.dismissed = this.current?.request_id;
        this.current = null;
        queueMicrotask(() => this.update());
      });
    }
    this.chip.addEventListener('click', () => {
      this.session.dismissed = null;
      this.update();
    });
  }

  /** setSession shows the requests of session (or none). */
  setSession(session) {
    this.session = session;
    this.current = null;
    this.update();
  }

  /** update shows the oldest open request, or closes the dialogs. */
  update() {
    const s = this.session;
    const head = s?.requests.values().next().value;
    if (!head || head.request_id === s.dismissed) {
      this.close();
    } else if (this.current?.request_id !== head.request_id) {
      this.open(head);
    }
    const n = s ? s.requests.size : 0;
    this.chip.hidden = !n || !!this.current;
    this.chip.textContent = n === 1 ? '1 prompt waiting — show' : `${n} prompts waiting — show`;
  }

  close() {
    this.current = null;
    for (const d of this.dialogs) if (d.open) d.close();
  }

  open(req) {
    const question = req.is_question && req.tool_name === 'AskUserQuestion' && Array.isArray(req.input?.questions);
    this.close();
    this.current = req;
    const dialog = this.dialogs[question ? 1 : 0];
    // (replaceChildren would show a false as the text "false")
    dialog.replaceChildren(...(question ? this.questionForm(req) : this.permissionForm(req)).flat().filter(Boolean));
    dialog.showModal();
    dialog.querySelector('[autofocus]')?.focus();
  }

  // send answers the request shown with body.
  send(req, body) {
    this.close();
    this.session.answer(req.request_id, body).catch(this.onError);
    this.update();
  }

  // deny refuses the request; stop also ends the turn (the page is inert
  // behind a modal dialog, so the dialog offers its own way to stop).
  deny(req, message, stop = false) {
    const body = { type: 'tool_approval', decision: 'deny', message: message || 'User denied this tool call' };
    if (stop) body.interrupt = true;
    this.send(req, body);
  }

  // permissionForm builds dialog#permission: what the tool would do, and
  // Allow once, Allow always (when the CLI suggests rules) and Deny.
  permissionForm(req) {
    const name = req.display_name || req.tool_name;
    const input = req.input && typeof req.input === 'object' ? req.input : {};
    const plan = typeof req.plan === 'string' ? req.plan : null;
    const fact = (label, value, cls = '') => value && el('div', { class: 'fact ' + cls },
      el('span', { class: 'label', text: label }), el('span', { class: 'value', text: value }));
    const reason = el('textarea', { id: 'deny-reason', rows: 2, placeholder: 'Reason for denying (optional)' });
    const rules = Array.isArray(req.permission_suggestions) ? req.permission_suggestions : [];
    const allow = (extra) => () => this.send(req, { type: 'tool_approval', decision: 'allow', ...extra });
    return [
      el('h2', { text: plan !== null ? 'Approve the plan?' : req.title || `Allow ${name}?` }),
      el('div', { class: 'facts' },
        fact('Tool', name === req.tool_name ? name : `${name} (${req.tool_name})`),
        fact('MCP server', req.mcp_server?.name),
        fact('Description', req.description),
        fact('Reason', req.decision_reason),
        fact('Path', req.blocked_path),
        req.tool_name === 'Bash' && fact('Command', input.command, 'mono'),
        /^(Write|Edit|MultiEdit|Read|NotebookEdit)$/.test(req.tool_name) && fact('File', input.file_path || input.notebook_path, 'mono')),
      plan !== null && el('div', { class: 'plan md' }, build(parse(plan))),
      Object.keys(input).length > 0 && el('details', { class: 'input', open: req.tool_name !== 'Bash' && plan === null },
        el('summary', { text: 'Input' }), el('pre', { text: pretty(input) })),
      reason,
      el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'primary', 'data-action': 'allow', autofocus: true, text: plan !== null ? 'Approve' : 'Allow once', onclick: allow() }),
        rules.length > 0 && el('button', { type: 'button', 'data-action': 'allow-always', title: alwaysText(rules), text: 'Allow always: ' + alwaysText(rules), onclick: allow({ updatedPermissions: rules }) }),
        el('button', { type: 'button', class: 'danger', 'data-action': 'deny', text: 'Deny', onclick: () => this.deny(req, reason.value.trim()) }),
        el('button', { type: 'button', class: 'danger', 'data-action': 'deny-stop', title: 'Deny and end the turn', text: 'Deny and stop', onclick: () => this.deny(req, reason.value.trim(), true) })),
    ];
  }

  // questionForm builds dialog#question: a fieldset per question with
  // radio buttons (check boxes for multiSelect) and a free-text "Other".
  questionForm(req) {
    const questions = req.input.questions.filter((q) => typeof q?.question === 'string');
    const sets = questions.map((q, n) => el('fieldset', { 'data-question': q.question },
      el('legend', {}, q.header && el('span', { class: 'q-header', text: q.header }), q.question),
      (Array.isArray(q.options) ? q.options : []).map((o, k) => el('label', { class: 'option' },
        el('input', { type: q.multiSelect ? 'checkbox' : 'radio', name: 'q' + n, value: o?.label ?? o, autofocus: !n && !k }),
        el('span', { class: 'option-label', text: o?.label ?? o }),
        o?.description && el('span', { class: 'option-desc', text: o.description }))),
      el('label', { class: 'option' }, 'Other:',
        el('input', { type: 'text', class: 'other', placeholder: q.multiSelect ? 'added to the choices' : 'your own answer' }))));
    const submit = () => {
      const answers = {};
      sets.forEach((fs, n) => {
        const chosen = [...fs.querySelectorAll('input:checked')].map((i) => i.value);
        const other = fs.querySelector('input.other').value.trim();
        const q = questions[n];
        if (q.multiSelect && (chosen.length || other)) answers[q.question] = other ? [...chosen, other] : chosen;
        else if (!q.multiSelect && (other || chosen.length)) answers[q.question] = other || chosen[0];
      });
      this.send(req, { type: 'question_answer', answers });
    };
    return [
      el('h2', { text: questions.length === 1 ? 'A question' : `${questions.length} questions` }),
      sets,
      el('div', { class: 'actions' },
        el('button', { type: 'button', id: 'question-submit', class: 'primary', text: 'Answer', onclick: submit }),
        el('button', { type: 'button', id: 'question-decline', text: 'Decline', onclick: () => this.deny(req, 'User declined to answer the question') }),
        el('button', { type: 'button', id: 'question-stop', class: 'danger', title: 'Decline and end the turn', text: 'Stop', onclick: () => this.deny(req, 'User declined to answer the question', true) })),
    ];
  }
}

/** alwaysText says what "Allow always" allows, from the CLI's suggestions. */
export function alwaysText(suggestions) {
  return suggestions.flatMap((s) => {
    const where = s?.destination ? ` (${s.destination})` : '';
    switch (s?.type) {
      case 'addRules':
      case 'replaceRules':
        return (s.rules || []).map((r) => `${s.behavior || 'allow'} ${r.toolName}${r.ruleContent ? `(${r.ruleContent})` : ''}${where}`);
      case 'addDirectories': return [`access to ${(s.directories || []).join(', ')}${where}`];
      case 'setMode': return [`mode ${s.mode}${where}`];
      default: return [String(s?.type)];
    }
  }).join('; ');
}
