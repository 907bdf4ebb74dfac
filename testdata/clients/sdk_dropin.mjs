// A real drop-in host: the official Agent SDK, with ccbridge as its
// pathToClaudeCodeExecutable. Run by e2e/dropin_test.go (TestDropInAgentSDK*,
// through agentSDK in e2e/harness_test.go), which sets SDK_MODULE, CCBRIDGE_BIN, WORKDIR and SCENARIO. Prints one JSON
// object a line for the test to check.
import { pathToFileURL } from 'node:url';

const { query } = await import(pathToFileURL(process.env.SDK_MODULE).href);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const prompts = {
  write: 'Please WRITEFILE now',
  interrupt: 'SLOW please',
};

const q = query({
  prompt: prompts[process.env.SCENARIO],
  options: {
    pathToClaudeCodeExecutable: process.env.CCBRIDGE_BIN,
    cwd: process.env.WORKDIR,
    env: { ...process.env },
    includePartialMessages: true,
    canUseTool: async (toolName, input) => {
      out({ event: 'can_use_tool', toolName, file_path: input.file_path });
      return { behavior: 'allow', updatedInput: input };
    },
    stderr: (data) => process.stderr.write(data),
  },
});

let interrupted = false;
let results = 0;
try {
  for await (const msg of q) {
    if (msg.type === 'result') results++;
    out({ event: 'message', type: msg.type, subtype: msg.subtype, is_error: msg.is_error,
          terminal_reason: msg.terminal_reason, session_id: msg.session_id });
    if (process.env.SCENARIO === 'interrupt' && !interrupted && msg.type === 'stream_event' &&
        msg.event?.delta?.type === 'text_delta') {
      interrupted = true;
      await q.interrupt();
      out({ event: 'interrupt_acknowledged' });
    }
  }
  out({ event: 'done' });
} catch (err) {
  // For a string prompt the SDK throws once an error result has been
  // yielded (an interrupted turn, say): that ends the run normally.
  const message = String(err?.message ?? err);
  out({ event: results > 0 ? 'done' : 'error', message });
  if (results === 0) process.exitCode = 1;
}
