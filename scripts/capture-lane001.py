#!/usr/bin/env python3
"""Capture the seed-001 flows (A: pause/resume, B: cancel, C: escalate,
D: a run that is not active) from `ccbridge --ui control` in front of the
real CLI and the fake model, for docs/protocol/control.md.

  go build -o /tmp/ccbridge . &&
  CCBRIDGE_CLAUDE=…/claude.exe scripts/capture-lane001.py [/tmp/ccbridge]

Prints every stdout line with the seconds since the start (`>>` for what
the script wrote); control.worker.text lines are left out.
"""
import json, os, subprocess, sys, tempfile, threading, time, queue

BIN = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ccbridge"
RUN = "loop-1703123456-12345"
work = tempfile.mkdtemp(prefix="cap001-")
home = os.path.join(work, "home"); os.mkdir(home)
env = dict(os.environ, HOME=home)
p = subprocess.Popen([BIN, "--fake-model", "default", "--ui", "control", "--run-id", RUN,
                      "--model", "haiku", "--team", "t", "--agent-id", "a", "--allow-sender", "s",
                      "--", "--allowedTools", "Bash", "--max-turns", "10"],
                     cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
t0 = time.time()
lines = queue.Queue()

def reader():
    for raw in p.stdout:
        lines.put(raw.decode().rstrip("\n"))
    lines.put(None)
threading.Thread(target=reader, daemon=True).start()

def show(tag, s):
    print("%6.2f %s %s" % (time.time() - t0, tag, s), flush=True)

def send(obj):
    s = json.dumps(obj, separators=(",", ":"))
    show(">>", s)
    p.stdin.write((s + "\n").encode()); p.stdin.flush()

def until(pred):
    while True:
        l = lines.get(timeout=30)
        if l is None:
            raise SystemExit("ccbridge ended")
        m = json.loads(l)
        if m.get("type") != "control.worker.text":
            show("<<", l)
        if pred(m):
            return m

def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

def req(rid, cmd, run=RUN, issue=None, payload=None):
    target = {"run_id": run}
    if issue:
        target["issue_id"] = issue
    return {"schema": 0, "type": "REQUEST", "request_id": rid, "command": cmd, "target": target,
            "timestamp": now(), "payload": payload or {}}

def prompt(rid, text):
    return {"type": "control.stdin.request", "v": 1, "request_id": rid, "team": "t", "agent_id": "a",
            "sender": "s", "session_id": sid, "sent_at": now(), "content": text}

caps = until(lambda m: m.get("type") == "control.capabilities")
sid = caps["session_id"]
until(lambda m: m.get("event") == "STATE")

print("# Flow A: pause and resume a running tool loop")
send(prompt("p-1", "TOOLSTEPS please"))
until(lambda m: m.get("type") == "control.worker.tool")
send(req("req-pause-001", "pause", issue="auth-123"))
until(lambda m: m.get("event") == "STATE")
time.sleep(3)
send(req("req-resume-001", "resume", issue="auth-123"))
until(lambda m: m.get("type") == "control.worker.turn")
until(lambda m: m.get("event") == "STATE" and m["stack"][0]["state"] == "idle")

print("# Flow B: cancel")
send(prompt("p-2", "SLOWTOOL please"))
until(lambda m: m.get("type") == "control.worker.tool")
send(req("req-cancel-001", "cancel"))
until(lambda m: m.get("type") == "control.worker.turn")
until(lambda m: m.get("event") == "STATE" and m["stack"][0]["state"] == "idle")

print("# Flow C: escalate")
send(req("req-escalate-001", "escalate", issue="complex-refactor",
         payload={"model": "opus", "reason": "Stuck on complex type inference"}))
until(lambda m: m.get("event") == "STATE")

print("# Flow D: a run that is not active")
send(req("req-race-001", "pause", run="loop-completed-xyz"))
until(lambda m: m.get("type") == "RESULT")

print("# The end of the input: DONE")
p.stdin.close()
until(lambda m: m.get("event") == "DONE")
p.wait()
