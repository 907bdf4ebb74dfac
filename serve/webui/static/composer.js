// composer.js: the prompt box, its image attachments and the slash
// command menu.
//
// Enter sends, Shift+Enter starts a new line. While a turn runs, Enter
// (and #send, then labelled Steer) adds the text to the running turn, and
// Alt+Enter (#queue) holds it until the turn ends. Images come from #attach or
// are pasted into #prompt; each is an .attachment chip until sent. A "/"
// at the start of the prompt opens #slash-menu, filtered as one types:
// Tab, Enter or a click completes, the arrow keys move, Escape closes.
// An "@" at the start of a word opens the same menu with the CLI's file
// suggestions for the text after it (opts.files); choosing one puts
// "@path" in its place.

import { $, el } from './util.js';

/** The image types the ipc dialect takes, and their largest size. */
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const MAX_IMAGE = 5 * 1024 * 1024;

/** The commands offered until the CLI has sent its list. */
export const BUILTIN_COMMANDS = ['clear', 'compact', 'context', 'cost', 'help', 'init', 'model', 'review'];

export class Composer {
  /**
   * @param {object} opts
   * @param {(text: string, attachments: object[]) => Promise<boolean>} opts.send
   * @param {(text: string, attachments: object[]) => Promise<boolean>} opts.steer into the running turn
   * @param {(text: string, attachments: object[]) => Promise<boolean>} opts.queue until the turn ends
   * @param {() => void} opts.interrupt
   * @param {() => string[]} opts.commands the slash commands, without "/"
   * @param {(query: string) => Promise<string[]>} opts.files the CLI's file suggestions for an @-mention
   * @param {(message: string) => void} opts.error
   */
  constructor(opts) {
    this.opts = opts;
    this.prompt = $('#prompt');
    this.attachments = []; // {kind, media_type, content, name, url}
    this.matches = []; // the commands (or, for an @-mention, the paths) in the open menu
    this.mention = null; // the @-mention being completed: {start, end} in the prompt
    this.asked = 0; // the number of the latest file suggestions asked for
    this.active = 0;
    this.sending = false;
    this.running = false; // a turn runs: Enter steers
    this.swallow = false; // drop the line break of an Enter handled on keydown

    this.prompt.addEventListener('keydown', (e) => this.keydown(e));
    // A key sent as keydown then char (as DevTools input does) would still
    // insert its line break after keydown was handled.
    this.prompt.addEventListener('beforeinput', (e) => {
      if (this.swallow && /^insert(LineBreak|Paragraph)$/.test(e.inputType)) e.preventDefault();
    });
    this.prompt.addEventListener('keyup', () => { this.swallow = false; });
    this.prompt.addEventListener('input', () => this.updateMenu());
    this.prompt.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files || [])].filter((f) => IMAGE_TYPES.includes(f.type));
      if (files.length) {
        e.preventDefault();
        this.addFiles(files);
      }
    });
    this.prompt.addEventListener('blur', () => setTimeout(() => this.closeMenu(), 150));
    $('#send').addEventListener('click', () => this.send());
    $('#queue').addEventListener('click', () => this.send('queue'));
    $('#interrupt').addEventListener('click', () => opts.interrupt());
    $('#attach').addEventListener('change', (e) => {
      this.addFiles(e.target.files);
      e.target.value = '';
    });
  }

  /**
   * setState enables the composer for a live session (or for the prompt
   * that starts one), and #interrupt and #queue while a turn runs, when
   * #send steers.
   */
  setState(enabled, running) {
    this.running = !!running;
    this.prompt.disabled = $('#attach').disabled = !enabled;
    $('#send').disabled = $('#queue').disabled = !enabled || this.sending;
    $('#interrupt').disabled = !enabled || !running;
    $('#queue').hidden = !running;
    const send = $('#send');
    const label = running ? 'Steer' : 'Send';
    if (send.textContent !== label) send.textContent = label;
    send.title = running ? 'Add this to the running turn (Enter)' : 'Send (Enter)';
  }

  keydown(e) {
    const enter = e.key === 'Enter' && !e.shiftKey && !e.isComposing;
    this.swallow = false;
    if (this.matches.length) {
      const n = this.matches.length;
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        this.active = (this.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
        this.renderMenu();
      } else if (e.key === 'Tab' || enter) {
        this.swallow = true;
        this.complete(this.matches[this.active]);
      } else if (e.key === 'Escape') {
        this.closeMenu();
      } else {
        return;
      }
      e.preventDefault();
    } else if (enter) {
      e.preventDefault();
      this.swallow = true;
      this.send(e.altKey && this.running ? 'queue' : undefined);
    }
  }

  /** send sends the prompt: how is 'send', 'steer' or 'queue' (default: steer while a turn runs). */
  async send(how) {
    const text = this.prompt.value;
    if (this.sending || this.prompt.disabled || (!text.trim() && !this.attachments.length)) return;
    how ||= this.running ? 'steer' : 'send';
    const attachments = this.attachments.map(({ kind, media_type, content }) => ({ kind, media_type, content }));
    this.sending = $('#send').disabled = $('#queue').disabled = true;
    try {
      if (await this.opts[how](text.trim() ? text : '', attachments)) {
        if (this.prompt.value === text) this.prompt.value = ''; // (keep what was typed meanwhile)
        this.attachments = [];
        this.renderAttachments();
        this.closeMenu();
      }
    } finally {
      this.sending = false;
      $('#send').disabled = $('#queue').disabled = this.prompt.disabled;
    }
  }

  /** addFiles reads image files into attachments. */
  addFiles(files) {
    for (const file of files) {
      if (!IMAGE_TYPES.includes(file.type) || file.size > MAX_IMAGE) {
        this.opts.error(`${file.name}: only PNG, JPEG, GIF and WebP images up to 5 MB can be attached`);
        continue;
      }
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result);
        this.attachments.push({ kind: 'image', media_type: file.type, content: url.slice(url.indexOf(',') + 1), name: file.name || 'image', url });
        this.renderAttachments();
      };
      reader.onerror = () => this.opts.error(`${file.name}: cannot be read`);
      reader.readAsDataURL(file);
    }
  }

  renderAttachments() {
    const list = $('#attachments');
    list.replaceChildren(...this.attachments.map((a) => el('span', { class: 'attachment', title: a.name },
      el('img', { src: a.url, alt: '' }),
      el('span', { class: 'name', text: a.name }),
      el('button', {
        type: 'button', class: 'remove', title: 'Remove', 'aria-label': 'Remove ' + a.name, text: '×',
        onclick: () => {
          this.attachments = this.attachments.filter((x) => x !== a);
          this.renderAttachments();
        },
      }))));
    list.hidden = !this.attachments.length;
  }

  // updateMenu opens the slash menu while the prompt is "/" and the start
  // of a command name.
  updateMenu() {
    const caret = this.prompt.selectionEnd ?? this.prompt.value.length;
    const at = /(^|\s)@([^\s@]*)$/.exec(this.prompt.value.slice(0, caret));
    if (at && this.opts.files) return this.suggestFiles(caret - at[2].length - 1, caret, at[2]);
    this.asked++; // no @-mention: answers still coming open nothing
    this.mention = null;
    const m = /^\/([^\s/]*)$/.exec(this.prompt.value);
    const before = this.matches[this.active];
    this.matches = m ? [...new Set(this.opts.commands())].sort().filter((c) => c.toLowerCase().startsWith(m[1].toLowerCase())).slice(0, 50) : [];
    this.active = Math.max(0, this.matches.indexOf(before));
    this.renderMenu();
  }

  // suggestFiles asks the CLI for the paths that complete the @-mention
  // between start and end (query: the text after "@"); an answer after a
  // newer question is dropped. Until the CLI has built its file index (a
  // second or two) it answers the top level only: an empty answer is
  // asked again a few times.
  async suggestFiles(start, end, query) {
    const n = ++this.asked;
    if (this.mention) this.mention = { start, end }; // an older menu's pick fits the mention as typed now
    let paths = [];
    for (let tries = 0; ; tries++) {
      try {
        paths = await this.opts.files(query);
      } catch {
        paths = [];
      }
      if (n !== this.asked) return;
      if (paths.length || !query || tries === 4) break;
      await new Promise((r) => setTimeout(r, 700));
      if (n !== this.asked) return;
    }
    this.mention = { start, end };
    this.matches = paths.slice(0, 50);
    this.active = 0;
    this.renderMenu();
  }

  renderMenu() {
    const menu = $('#slash-menu');
    const mention = !!this.mention;
    menu.replaceChildren(...this.matches.map((name, i) => el('div', {
      class: (mention ? 'slash-item mention-item' : 'slash-item') + (i === this.active ? ' active' : ''),
      role: 'option', text: (mention ? '@' : '/') + name, 'data-path': mention ? name : undefined,
      onmousedown: (e) => e.preventDefault(), // keep the focus in the prompt
      onclick: () => this.complete(name),
    })));
    menu.hidden = !this.matches.length;
    menu.querySelector('.active')?.scrollIntoView({ block: 'nearest' });
  }

  closeMenu() {
    this.matches = [];
    this.asked++; // an answer still coming opens nothing
    this.mention = null;
    this.renderMenu();
  }

  complete(name) {
    if (this.mention) {
      // A folder stays open to go on into it; a file ends the mention.
      const { start, end } = this.mention;
      const v = this.prompt.value;
      const put = '@' + name + (name.endsWith('/') ? '' : ' ');
      this.prompt.value = v.slice(0, start) + put + v.slice(end);
      this.prompt.selectionStart = this.prompt.selectionEnd = start + put.length;
      this.closeMenu();
      this.prompt.focus();
      if (name.endsWith('/')) this.updateMenu();
      return;
    }
    this.prompt.value = '/' + name + ' ';
    this.closeMenu();
    this.prompt.focus();
  }
}
