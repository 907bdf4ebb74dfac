// composer.js: the prompt box, its image attachments and the slash
// command menu.
//
// Enter sends, Shift+Enter starts a new line. Images come from #attach or
// are pasted into #prompt; each is an .attachment chip until sent. A "/"
// at the start of the prompt opens #slash-menu, filtered as one types:
// Tab, Enter or a click completes, the arrow keys move, Escape closes.

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
   * @param {() => void} opts.interrupt
   * @param {() => string[]} opts.commands the slash commands, without "/"
   * @param {(message: string) => void} opts.error
   */
  constructor(opts) {
    this.opts = opts;
    this.prompt = $('#prompt');
    this.attachments = []; // {kind, media_type, content, name, url}
    this.matches = []; // the commands in the open menu
    this.active = 0;
    this.sending = false;
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
    $('#interrupt').addEventListener('click', () => opts.interrupt());
    $('#attach').addEventListener('change', (e) => {
      this.addFiles(e.target.files);
      e.target.value = '';
    });
  }

  /** setState enables the composer for a live session, and #interrupt while a turn runs. */
  setState(enabled, running) {
    this.prompt.disabled = $('#attach').disabled = !enabled;
    $('#send').disabled = !enabled || this.sending;
    $('#interrupt').disabled = !enabled || !running;
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
      this.send();
    }
  }

  async send() {
    const text = this.prompt.value;
    if (this.sending || this.prompt.disabled || (!text.trim() && !this.attachments.length)) return;
    const attachments = this.attachments.map(({ kind, media_type, content }) => ({ kind, media_type, content }));
    this.sending = $('#send').disabled = true;
    try {
      if (await this.opts.send(text.trim() ? text : '', attachments)) {
        if (this.prompt.value === text) this.prompt.value = ''; // (keep what was typed meanwhile)
        this.attachments = [];
        this.renderAttachments();
        this.closeMenu();
      }
    } finally {
      this.sending = false;
      $('#send').disabled = this.prompt.disabled;
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
    const m = /^\/([^\s/]*)$/.exec(this.prompt.value);
    const before = this.matches[this.active];
    this.matches = m ? [...new Set(this.opts.commands())].sort().filter((c) => c.toLowerCase().startsWith(m[1].toLowerCase())).slice(0, 50) : [];
    this.active = Math.max(0, this.matches.indexOf(before));
    this.renderMenu();
  }

  renderMenu() {
    const menu = $('#slash-menu');
    menu.replaceChildren(...this.matches.map((name, i) => el('div', {
      class: i === this.active ? 'slash-item active' : 'slash-item',
      role: 'option', text: '/' + name,
      onmousedown: (e) => e.preventDefault(), // keep the focus in the prompt
      onclick: () => this.complete(name),
    })));
    menu.hidden = !this.matches.length;
    menu.querySelector('.active')?.scrollIntoView({ block: 'nearest' });
  }

  closeMenu() {
    this.matches = [];
    this.renderMenu();
  }

  complete(name) {
    this.prompt.value = '/' + name + ' ';
    this.closeMenu();
    this.prompt.focus();
  }
}
