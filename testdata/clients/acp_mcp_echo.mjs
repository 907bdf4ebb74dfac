// A minimal MCP server over stdio (newline-delimited JSON-RPC) with one
// tool, "echo". acp_client.mjs passes it to ccbridge in session/new's
// mcpServers; the fake model's MCPECHO calls mcp__sdkmcp__echo.
import { createInterface } from 'node:readline';

const send = (o) => process.stdout.write(JSON.stringify(o) + '\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  let msg;
  try { msg = JSON.parse(line); } catch { continue; }
  if (msg.id === undefined) continue; // notifications
  switch (msg.method) {
    case 'initialize':
      send({ jsonrpc: '2.0', id: msg.id, result: {
        protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} }, serverInfo: { name: 'echo', version: '1.0.0' } } });
      break;
    case 'tools/list':
      send({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'echo', description: 'Echo the text back',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }] } });
      break;
    case 'tools/call':
      send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text',
        text: 'echo: ' + (msg.params?.arguments?.text ?? '') + ' ' + (process.env.ECHO_TAG ?? '') }] } });
      break;
    default:
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
  }
}
