// Checks ccbridge's ACP output against the ACP client library's own
// schemas (the zod validators @agentclientprotocol/sdk parses every
// message with). Run by e2e/acp_test.go (TestACPGoldenSchema) with
// ACP_ZOD (the library's zod.gen.js) and GOLDEN_DIR (testdata/acp). Prints
// one JSON object a line per message that fails, then {"event":"done",...}.
import { pathToFileURL } from 'node:url';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const z = await import(pathToFileURL(process.env.ACP_ZOD).href);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const dir = process.env.GOLDEN_DIR;

const byMethod = {
  'session/update': z.zSessionNotification,
  'session/request_permission': z.zRequestPermissionRequest,
  'elicitation/create': z.zCreateElicitationRequest,
};
let checked = 0;
const counts = {};
for (const f of readdirSync(dir).filter((f) => f.endsWith('.golden')).sort()) {
  const lines = readFileSync(join(dir, f), 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (!line) return;
    const msg = JSON.parse(line);
    let schema, value, what;
    if (msg.method) {
      schema = byMethod[msg.method];
      value = msg.params;
      what = msg.method + (msg.params?.update ? ':' + msg.params.update.sessionUpdate : '');
    } else if (msg.error) {
      schema = z.zError;
      value = msg.error;
      what = 'error';
    } else if (msg.id === 'setup') {
      schema = z.zNewSessionResponse;
      value = msg.result;
      what = 'session/new result';
    } else {
      schema = z.zPromptResponse;
      value = msg.result;
      what = 'session/prompt result';
    }
    if (!schema) {
      out({ event: 'unknown', file: f, line: i + 1, method: msg.method });
      return;
    }
    const r = schema.safeParse(value);
    checked++;
    counts[what] = (counts[what] ?? 0) + 1;
    if (!r.success) {
      out({ event: 'invalid', file: f, line: i + 1, what, issues: r.error.issues.slice(0, 3) });
    }
  });
}
out({ event: 'done', checked, counts });
