// A real ACP client: the official ACP TypeScript library
// (@agentclientprotocol/sdk, pinned in scripts/install-tools.sh) driving
// `ccbridge --ui acp` over its stdio. Run by the e2e tests (acpClient in
// e2e/harness_test.go), which set ACP_SDK (the library's entry file),
// CCBRIDGE_BIN, WORKDIR and SCENARIO.
// Prints one JSON object a line for the test to check; the last is
// {"event":"done"} when the scenario ran to its end.
import { pathToFileURL } from 'node:url';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { existsSync, readFileSync, readdirSync, readlinkSync, unlinkSync, writeFileSync } from 'node:fs';

const acp = await import(pathToFileURL(process.env.ACP_SDK).href);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const cwd = process.env.WORKDIR;
const scenario = process.env.SCENARIO;

// The library reports what it cannot handle (a notification that fails
// its schema, a response to an unknown request) through console.error:
// the test fails on any of them.
const origError = console.error;
console.error = (...args) => {
  out({ event: 'sdk_error', message: args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ') });
  origError(...args);
};

// The agent to start: `ccbridge --ui acp`, or the program and arguments
// AGENT_COMMAND names (a JSON array): the Node ACP adapter
// claude-agent-acp, run in front of ccbridge in drop-in mode.
const agentCommand = process.env.AGENT_COMMAND ? JSON.parse(process.env.AGENT_COMMAND) : [process.env.CCBRIDGE_BIN, '--ui', 'acp'];

// connect starts one agent and returns a client connection to it.
// policy answers the agent's requests: (method, params, signal) → result.
function connect(name, policy, extraArgs = []) {
  const child = spawn(agentCommand[0], [...agentCommand.slice(1), ...extraArgs], {
    cwd, env: process.env, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const waiters = [];
  const app = acp.client({ name })
    .onNotification('session/update', ({ params }) => {
      out({ event: 'update', conn: name, sessionId: params.sessionId, update: params.update });
      for (const w of [...waiters]) {
        if (w.pred(params)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(params);
        }
      }
    })
    .onRequest('session/request_permission', async ({ params, signal }) => {
      out({ event: 'request', conn: name, method: 'session/request_permission', params });
      const r = await policy('session/request_permission', params, signal);
      out({ event: 'answer', conn: name, method: 'session/request_permission', result: r });
      return r;
    })
    .onRequest('elicitation/create', async ({ params, signal }) => {
      out({ event: 'request', conn: name, method: 'elicitation/create', params });
      const r = await policy('elicitation/create', params, signal);
      out({ event: 'answer', conn: name, method: 'elicitation/create', result: r });
      return r;
    });
  const conn = app.connect(stream);
  const ctx = conn.agent;
  // call sends a request and records its outcome.
  const call = async (method, params) => {
    try {
      const result = await ctx.request(method, params);
      out({ event: 'response', conn: name, method, result: result ?? null });
      return { result };
    } catch (err) {
      const error = { code: err.code, message: err.message, data: err.data };
      out({ event: 'response', conn: name, method, error });
      return { error };
    }
  };
  const update = (pred) => new Promise((resolve) => waiters.push({ pred, resolve }));
  const close = async () => {
    child.stdin.end();
    const e = await exited;
    out({ event: 'exit', conn: name, ...e });
    conn.close();
    return e;
  };
  return { child, call, notify: (m, p) => ctx.notify(m, p), update, close, exited };
}

const selected = (optionId) => ({ outcome: { outcome: 'selected', optionId } });
const allowAll = async (method, params) =>
  method === 'session/request_permission' ? selected('allow') : { action: 'decline' };

const clientCaps = (extra = {}) => ({ protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...extra }, clientInfo: { name: 'ccbridge-e2e', version: '1.0.0' } });

async function newSession(c, caps) {
  const init = await c.call('initialize', caps ?? clientCaps());
  if (init.error) throw new Error('initialize failed: ' + init.error.message);
  const s = await c.call('session/new', { cwd, mcpServers: [] });
  if (s.error) throw new Error('session/new failed: ' + s.error.message);
  return s.result.sessionId;
}

const prompt = (c, sessionId, text) => c.call('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });

// The pids of the CLI children of a ccbridge process.
function cliPids(pid) {
  const pids = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      for (const p of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(/\s+/)) {
        if (p) pids.push(Number(p));
      }
    } catch {}
  }
  return pids;
}

// The processes below pid, each with its parent, the program it runs and
// its arguments.
function descendants(pid) {
  const procs = [];
  for (const c of cliPids(pid)) {
    let exe = '', args = [];
    try {
      exe = readlinkSync(`/proc/${c}/exe`);
      args = readFileSync(`/proc/${c}/cmdline`, 'utf8').split('\0').slice(1, -1);
    } catch {}
    procs.push({ pid: c, ppid: pid, exe, args }, ...descendants(c));
  }
  return procs;
}

const isChunk = (sid) => (p) => p.sessionId === sid && p.update.sessionUpdate === 'agent_message_chunk';

const scenarios = {
  // An editor's session through another agent (AGENT_COMMAND): a text
  // turn, then a Write and a Bash command, each allowed once when its
  // permission request arrives; the processes below the agent are
  // recorded while the request is open.
  async editor() {
    let c;
    c = connect('a', async (method, params) => {
      out({ event: 'processes', agent: c.child.pid, procs: descendants(c.child.pid) });
      const allow = params.options?.find((o) => o.kind === 'allow_once');
      return allow ? selected(allow.optionId) : { outcome: { outcome: 'cancelled' } };
    });
    const sid = await newSession(c);
    await prompt(c, sid, 'hello');
    await prompt(c, sid, 'WRITEFILE please');
    await prompt(c, sid, 'BASH please');
    await c.close();
  },

  // A session written in one connection, then listed, loaded (with its
  // history replayed) and resumed in new ccbridge processes.
  async load() {
    const a = connect('a', async () => selected('allow'));
    const sid = await newSession(a);
    await prompt(a, sid, 'hello there');
    await prompt(a, sid, 'WRITEFILE please');
    await a.close();
    out({ event: 'phase', name: 'load' });
    const b = connect('b', allowAll);
    await b.call('initialize', clientCaps());
    await b.call('session/list', { cwd });
    await b.call('session/list', {});
    await b.call('session/load', { sessionId: sid, cwd, mcpServers: [] });
    await prompt(b, sid, 'hello after load');
    await b.call('session/load', { sessionId: '00000000-0000-4000-8000-000000000000', cwd, mcpServers: [] });
    await b.close();
    out({ event: 'phase', name: 'resume' });
    const c = connect('c', allowAll);
    await c.call('initialize', clientCaps());
    await c.call('session/resume', { sessionId: sid, cwd });
    await prompt(c, sid, 'hello after resume');
    await c.call('session/close', { sessionId: sid });
    await prompt(c, sid, 'after close');
    await c.close();
  },

  // AskUserQuestion: through an elicitation form when the client offers
  // one (else as a permission request: one_session's question_permission).
  async question_elicitation() {
    const c = connect('a', async (method, params) => {
      if (method === 'elicitation/create') return { action: 'accept', content: { q0: 'Blue' } };
      return selected('allow');
    });
    const sid = await newSession(c, clientCaps({ elicitation: { form: {} } }));
    await prompt(c, sid, 'ASKUSER please');
    await c.close();
  },
  // Two sessions in one process, prompted at the same time.
  async two_sessions() {
    const c = connect('a', async () => selected('allow'));
    await c.call('initialize', clientCaps());
    const [s1, s2] = await Promise.all([
      c.call('session/new', { cwd, mcpServers: [] }),
      c.call('session/new', { cwd, mcpServers: [] }),
    ]);
    const a = s1.result.sessionId, b = s2.result.sessionId;
    out({ event: 'sessions', ids: [a, b] });
    const pids = new Set();
    const p1 = prompt(c, a, 'SLOW please');
    const p2 = prompt(c, b, 'hello');
    await c.update(isChunk(a));
    for (const p of cliPids(c.child.pid)) pids.add(p);
    out({ event: 'cli_pids', pids: [...pids] });
    await Promise.all([p1, p2]);
    await c.close();
  },

  // The client's MCP servers reach the CLI (--mcp-config): the model calls
  // a tool of a stdio server given in session/new.
  async mcp() {
    const c = connect('a', async () => selected('allow'));
    await c.call('initialize', clientCaps());
    const echo = new URL('./acp_mcp_echo.mjs', import.meta.url).pathname;
    const s = await c.call('session/new', { cwd, mcpServers: [
      { name: 'sdkmcp', command: process.execPath, args: [echo], env: [{ name: 'ECHO_TAG', value: 'from-env' }] }] });
    await prompt(c, s.result.sessionId, 'MCPECHO please');
    await c.close();
  },

  // Rewind (ccbridge's _session/rewind and _session/rewind_points): two
  // prompts, the second writing written.txt; errors, a dry run, a rewind
  // of the last turn with its files, a prompt after it; then a second
  // connection loads the session (its replay). TOK_A, TOK_B and TOK_C
  // are words of the three prompts.
  async rewind() {
    const { TOK_A: a, TOK_B: b, TOK_C: cc } = process.env;
    const file = () => out({ event: 'file', exists: existsSync(cwd + '/written.txt') });
    const c = connect('a', allowAll);
    const sid = await newSession(c);
    await prompt(c, sid, 'hello ' + a);
    await prompt(c, sid, 'WRITEFILE ' + b);
    file();
    await c.call('_session/rewind_points', { sessionId: sid });
    await c.call('_session/rewind', { sessionId: sid, numTurns: 3, mode: 'both' });
    await c.call('_session/rewind', { sessionId: sid, mode: 'both' });
    await c.call('_session/rewind', { sessionId: sid, numTurns: 1, mode: 'both', dryRun: true });
    file();
    await c.call('_session/rewind', { sessionId: sid, numTurns: 1, mode: 'both' });
    file();
    await c.call('_session/rewind_points', { sessionId: sid });
    await prompt(c, sid, 'go on ' + cc);
    await c.close();
    const d = connect('b', allowAll);
    await d.call('initialize', clientCaps());
    await d.call('session/load', { sessionId: sid, cwd, mcpServers: [] });
    await d.close();
  },

  // One connection and one session for the scenarios that leave the
  // session idle (TestACPOneSession splits the events at each
  // {"event":"phase","name":...} line; a phase's client policy is its
  // own): basic (initialize, session/new, a text turn with thinking);
  // write_reject and write_allow (WRITEFILE's permission request
  // rejected, then allowed once); cancel (session/cancel while the text
  // streams, then a prompt); cancel_permission (a permission request
  // that a cancel finds pending is answered cancelled, then a prompt);
  // question_permission (AskUserQuestion as a permission request whose
  // options are the answers: Blue); subagent (its tool calls carry their
  // parent in _meta); child_killed (the CLI killed mid-prompt: the prompt
  // is answered, the next resumes the session in a new CLI); withdrawn
  // (the CLI dies while a permission request is open: ccbridge withdraws
  // it, the library aborts the handler, which answers cancelled; the
  // prompt gets its error, the session goes on); steer (_session/steering
  // with no prompt running and idleBehavior promptRequired is left to the
  // client; during STEER_PROMPT's tool loop STEER_TEXT is added to the
  // running turn, whose prompt is answered once); then modes (set_mode
  // acceptEdits, a Write that needs no permission, set_config_option
  // model, bad values, and plan mode left through ExitPlanMode's
  // permission request), which changes the mode and the model. The phases
  // that ask for a Write say whether written.txt is there at their end
  // ({"event":"file"}); write_allow then removes it, so that the next
  // Write creates it again.
  async one_session() {
    let policy = allowAll;
    const c = connect('a', (method, params, signal) => policy(method, params, signal));
    // The phase's name goes to stderr too, which ccbridge's log shares.
    const phase = (name, p) => {
      policy = p;
      out({ event: 'phase', name });
      process.stderr.write(JSON.stringify({ e2e_phase: name }) + '\n');
    };
    const file = () => {
      const path = cwd + '/written.txt';
      const exists = existsSync(path);
      out({ event: 'file', exists, content: exists ? readFileSync(path, 'utf8') : null });
    };
    phase('basic', allowAll);
    const sid = await newSession(c);
    await prompt(c, sid, 'hello');

    phase('write_reject', async () => selected('reject'));
    await prompt(c, sid, 'WRITEFILE please');
    file();
    phase('write_allow', async () => selected('allow'));
    await prompt(c, sid, 'WRITEFILE please');
    file();
    unlinkSync(cwd + '/written.txt');

    phase('cancel', allowAll);
    let p = prompt(c, sid, 'SLOW please');
    await c.update(isChunk(sid));
    out({ event: 'cancelling' });
    await c.notify('session/cancel', { sessionId: sid });
    await p;
    await prompt(c, sid, 'hello again');

    let release;
    phase('cancel_permission', (method, params, signal) => new Promise((resolve) => {
      // Never chooses: the cancel settles it.
      release = () => resolve({ outcome: { outcome: 'cancelled' } });
      signal.addEventListener('abort', () => resolve({ outcome: { outcome: 'cancelled' } }));
    }));
    p = prompt(c, sid, 'WRITEFILE please');
    await c.update((u) => u.sessionId === sid && u.update.sessionUpdate === 'tool_call_update' && u.update.rawInput?.file_path);
    await new Promise((r) => setTimeout(r, 300));
    out({ event: 'cancelling' });
    await c.notify('session/cancel', { sessionId: sid });
    release?.();
    await p;
    await prompt(c, sid, 'hello again');
    file();

    phase('question_permission', async (method, params) => {
      const blue = params.options?.find((o) => o.name === 'Blue');
      return selected(blue ? blue.optionId : 'allow');
    });
    await prompt(c, sid, 'ASKUSER please');

    phase('subagent', async () => selected('allow'));
    writeFileSync(cwd + '/hello.txt', 'hello world\n');
    await prompt(c, sid, 'SUBAGENT please');

    phase('child_killed', allowAll);
    p = prompt(c, sid, 'SLOW please');
    await c.update(isChunk(sid));
    let pids = cliPids(c.child.pid);
    out({ event: 'killing', pids });
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await p;
    await prompt(c, sid, 'hello after the crash');
    out({ event: 'cli_pids', pids: cliPids(c.child.pid) });

    let asked;
    const seen = new Promise((r) => { asked = r; });
    phase('withdrawn', (method, params, signal) => new Promise((resolve) => {
      asked();
      signal.addEventListener('abort', () => {
        out({ event: 'aborted', reason: String(signal.reason?.message ?? signal.reason) });
        resolve({ outcome: { outcome: 'cancelled' } });
      });
    }));
    p = prompt(c, sid, 'WRITEFILE please');
    await seen;
    pids = cliPids(c.child.pid);
    out({ event: 'killing', pids });
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await p;
    await prompt(c, sid, 'hello after the crash');
    file();

    phase('steer', allowAll);
    const promptRequired = { steering: { idleBehavior: 'promptRequired' } };
    const steer = (text, _meta) => c.call('_session/steering', { sessionId: sid, prompt: [{ type: 'text', text }], _meta });
    await steer('too early', promptRequired);
    p = prompt(c, sid, process.env.STEER_PROMPT);
    await c.update((u) => u.sessionId === sid && u.update.sessionUpdate === 'tool_call');
    await steer(process.env.STEER_TEXT);
    await p;
    await steer('too late', promptRequired);
    await prompt(c, sid, 'hello');

    phase('modes', async (method, params) => {
      if (params.toolCall?.kind === 'switch_mode') return selected('acceptEdits');
      return selected('allow');
    });
    await c.call('session/set_mode', { sessionId: sid, modeId: 'acceptEdits' });
    await prompt(c, sid, 'WRITEFILE please');
    await c.call('session/set_config_option', { sessionId: sid, configId: 'model', value: 'sonnet' });
    await c.call('session/set_mode', { sessionId: sid, modeId: 'no-such-mode' });
    await c.call('session/set_config_option', { sessionId: sid, configId: 'model', value: 'no-such-model' });
    await c.call('session/set_config_option', { sessionId: sid, configId: 'mode', value: 'plan' });
    await prompt(c, sid, 'EXITPLAN please');
    await c.close();
  },

};

try {
  await scenarios[scenario]();
  out({ event: 'done' });
  process.exit(0);
} catch (err) {
  out({ event: 'error', message: String(err?.stack ?? err) });
  process.exit(1);
}
