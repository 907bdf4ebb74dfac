#!/usr/bin/env python3
"""Probe the real Claude Code CLI's PreToolUse hook_callback behaviour
through ccbridge in drop-in mode (docs/control/lane001-cli.md).

The script is the host: it writes an initialize control_request with the
hooks given, one prompt, and answers (or holds) each hook_callback as told.
ccbridge runs the CLI ($CCBRIDGE_TEST_CLAUDE) against its built-in fake
model (CCBRIDGE_FAKE_MODEL, a scenario written by this script), and its
debug log names every model request ("fakemodel: messages"), which the
script prints as MODEL lines. Every line is printed with the seconds since
the start; stream_event lines are left out.

  go build -o /tmp/probe-ccbridge . &&
  CCBRIDGE_TEST_CLAUDE=…/claude.exe scripts/probe-hook.py [options]

Options (times in seconds after the first hook_callback arrived):
  --hooks JSON          the initialize request's hooks (default: PreToolUse,
                        matcher Bash, hookCallbackIds ["pause"])
  --prompt TEXT         the prompt (default "ONEBASH"; LOOPBASH loops)
  --answer JSON         the hook answer (default {})
  --hold S              hold each answer S seconds (default 0)
  --holdfirst           hold only the first hook_callback
  --noanswer            never answer a hook_callback
  --at T:LINE           write LINE (raw JSON, or "prompt:TEXT",
                        "interrupt", "set_model:NAME") at T s
  --results N           close stdin after N results (default 1)
  --settle S            close stdin S s after the last result (default 0)

With PROBE_KEEP=1 the temporary folder (cwd, HOME with the CLI's session
file) is kept and named; otherwise it is removed.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, threading, time

SCENARIO = {
    "name": "probe-hook",
    "rules": [
        {"keyword": "LOOPBASH", "loop": True, "steps": [
            {"blocks": [{"type": "tool_use", "name": "Bash",
                         "input": {"command": "echo loop {{step}}", "description": "Echo"}}]}]},
        {"keyword": "ONEBASH", "steps": [
            {"blocks": [{"type": "tool_use", "name": "Bash",
                         "input": {"command": "echo ran-one > ran.txt; echo one", "description": "Echo one"}}]},
            {"blocks": [{"type": "text", "text": "Done. {{tool_result}}"}]}]},
    ],
    "fallback": {"steps": [{"blocks": [{"type": "text", "text": "Plain reply. "}]}]},
}

FLAGS = ["--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
         "--permission-prompt-tool", "stdio", "--include-partial-messages"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hooks", default='{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["pause"]}]}')
    ap.add_argument("--prompt", default="ONEBASH")
    ap.add_argument("--answer", default="{}")
    ap.add_argument("--hold", type=float, default=0)
    ap.add_argument("--holdfirst", action="store_true")
    ap.add_argument("--noanswer", action="store_true")
    ap.add_argument("--at", action="append", default=[])
    ap.add_argument("--results", type=int, default=1)
    ap.add_argument("--settle", type=float, default=0)
    ap.add_argument("--bin", default="/tmp/probe-ccbridge")
    o = ap.parse_args()

    work = tempfile.mkdtemp(prefix="probe-hook-")
    scen = os.path.join(work, "scenario.json")
    with open(scen, "w") as f:
        json.dump(SCENARIO, f)
    cwd = os.path.join(work, "cwd"); os.mkdir(cwd)
    home = os.path.join(work, "home"); os.mkdir(home)
    env = dict(os.environ, HOME=home, CCBRIDGE_CLAUDE=os.environ["CCBRIDGE_TEST_CLAUDE"],
               CCBRIDGE_FAKE_MODEL=scen, CCBRIDGE_LOG_LEVEL="debug")
    p = subprocess.Popen([o.bin] + FLAGS, cwd=cwd, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.time()
    lock = threading.Lock()

    def out(tag, s):
        with lock:
            print("%7.2f %s %s" % (time.time() - t0, tag, s), flush=True)

    def send(line):
        out(">>", line)
        try:
            p.stdin.write((line + "\n").encode()); p.stdin.flush()
        except BrokenPipeError:
            out("!!", "stdin closed")

    def stderr_reader():
        for raw in p.stderr:
            s = raw.decode(errors="replace").rstrip()
            if "fakemodel: messages" in s:
                out("MODEL", s[s.find("fakemodel"):])
            elif "level=WARN" in s or "level=ERROR" in s:
                out("LOG", s[:300])
    threading.Thread(target=stderr_reader, daemon=True).start()

    send(json.dumps({"type": "control_request", "request_id": "init-1",
                     "request": {"subtype": "initialize", "hooks": json.loads(o.hooks)}}))
    send(json.dumps({"type": "user", "session_id": "", "parent_tool_use_id": None,
                     "message": {"role": "user", "content": [{"type": "text", "text": o.prompt}]}}))

    def convert(line):
        if line.startswith("prompt:"):
            return json.dumps({"type": "user", "session_id": "", "parent_tool_use_id": None,
                               "message": {"role": "user", "content": [{"type": "text", "text": line[7:]}]}})
        if line == "interrupt":
            return '{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}'
        if line.startswith("set_model:"):
            return json.dumps({"type": "control_request", "request_id": "sm-" + line[10:],
                               "request": {"subtype": "set_model", "model": line[10:]}})
        return line

    timed = []
    for a in o.at:
        t, line = a.split(":", 1)
        timed.append((float(t), convert(line)))
    first_hook = [None]
    hooks_seen = [0]

    def answer_later(rid, delay):
        time.sleep(delay)
        send(json.dumps({"type": "control_response", "response": {
            "subtype": "success", "request_id": rid, "response": json.loads(o.answer)}}))

    def run_timed():
        for t, line in sorted(timed):
            d = first_hook[0] + t - time.time()
            if d > 0:
                time.sleep(d)
            send(line)

    results = 0
    for raw in p.stdout:
        line = raw.decode(errors="replace").rstrip("\n")
        try:
            m = json.loads(line)
        except ValueError:
            out("<<?", line[:300]); continue
        typ = m.get("type")
        if typ == "stream_event":
            continue
        if typ == "control_request" and m["request"].get("subtype") == "hook_callback":
            out("<<", line)
            hooks_seen[0] += 1
            if first_hook[0] is None:
                first_hook[0] = time.time()
                threading.Thread(target=run_timed, daemon=True).start()
            if not o.noanswer:
                hold = o.hold if (not o.holdfirst or hooks_seen[0] == 1) else 0
                threading.Thread(target=answer_later, args=(m["request_id"], hold), daemon=True).start()
            continue
        if typ == "control_request" and m["request"].get("subtype") == "can_use_tool":
            out("<<", line[:600])
            send(json.dumps({"type": "control_response", "response": {
                "subtype": "success", "request_id": m["request_id"], "response": {"behavior": "allow"}}}))
            continue
        if typ == "control_response" and m["response"].get("request_id") == "init-1":
            r = m["response"].get("response", {})
            keep = {k: r.get(k) for k in ("hooks_applied", "hook_on_failure_supported",
                                           "hooks_when_unanswered_kept", "claude_code_version")}
            out("<<", "initialize response (subset): " + json.dumps(keep))
            continue
        if typ == "result":
            out("<<", "result (subset): " + json.dumps({k: m.get(k) for k in (
                "subtype", "is_error", "terminal_reason", "stop_reason", "num_turns", "result")}))
        elif typ == "system" and m.get("subtype") == "init":
            out("<<", "system/init (subset): " + json.dumps({k: m.get(k) for k in ("model", "session_id")}))
        else:
            out("<<", line if len(line) < 1500 else line[:1500] + "…")
        if typ == "result":
            results += 1
            if results >= o.results:
                if o.settle:
                    time.sleep(o.settle)
                out("--", "closing stdin")
                p.stdin.close()
    p.wait()
    out("--", "exit %d; ran.txt %s" % (p.returncode, "exists" if os.path.exists(os.path.join(cwd, "ran.txt")) else "absent"))
    if os.environ.get("PROBE_KEEP"):
        out("--", "kept " + work)  # the CLI's session file is under home/.claude/projects/
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
