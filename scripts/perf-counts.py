#!/usr/bin/env python3
"""Load-robust per-message figures of one ccbridge process (docs/performance.md).

The machines here are shared and wall-clock latency is noisy; what a
process does per message is not: its context switches, futex calls,
writes and wake-ups (perf's software counters and syscall tracepoints,
counted on the ccbridge process alone with perf stat -p, not on the fake
CLI or the guardian), its CPU time, and its peak RSS.

    go test -c -o /tmp/e2e.test ./e2e && CGO_ENABLED=0 go build -o /tmp/ccb .
    scripts/perf-counts.py dropin /tmp/e2e.test /tmp/ccb [MESSAGES [RATE]]
    scripts/perf-counts.py relay  /tmp/e2e.test            [MESSAGES [RATE]]
    scripts/perf-counts.py acp    /tmp/e2e.test /tmp/ccb

dropin and relay play one paced turn (the harness's fake CLI, 2,000
messages a second, 6,000 by default; RATE 0 is the harness's burst,
one write a line, or PERF_BATCH bytes a write) through ccbridge drop-in or through
the harness's plain byte relay and print one JSON line: per message the
counters, and the process's VmHWM. acp plays the acp comparison's two
turns (TestPerfACP: a burst of 20,000 chunks, then 1,000 at 500/s) and
prints the VmHWM of ccbridge and of its guardian. Run the builds to
compare in turn, several times, and compare medians.

Needs perf (linux-perf) and tracepoints readable by the user (root here).
"""
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

EVENTS = ("task-clock,context-switches,cpu-migrations,sched:sched_wakeup,"
          "syscalls:sys_enter_futex,syscalls:sys_enter_read,syscalls:sys_enter_write,"
          "syscalls:sys_enter_pwritev2,syscalls:sys_enter_epoll_pwait")
USER = (b'{"type":"user","session_id":"","message":{"role":"user","content":'
        b'[{"type":"text","text":"go"}]},"parent_tool_use_id":null}\n')


def status(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def paced(mode, fake, ccb, n, rate):
    env = dict(os.environ, CCBRIDGE_PERF_HELPER="fakecli", CCBRIDGE_CLAUDE=fake,
               CCBRIDGE_PERF_FAKE_MODE="paced" if rate > 0 else "burst", CCBRIDGE_PERF_FAKE_N=str(n),
               CCBRIDGE_PERF_FAKE_RATE=str(rate), CCBRIDGE_PERF_FAKE_BATCH=os.environ.get("PERF_BATCH", "0"),
               CCBRIDGE_LOG_LEVEL="warn")
    prog = ccb
    if mode == "relay":
        env["CCBRIDGE_PERF_HELPER"], prog = "relay", fake
    p = subprocess.Popen([prog, "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0)
    time.sleep(0.3)  # the CLI (and a guardian) started: perf sees this process only
    perf = subprocess.Popen(["perf", "stat", "-x", ",", "-e", EVENTS, "-p", str(p.pid)],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    p.stdin.write(USER)
    out = io.BufferedReader(p.stdout, 1 << 20)
    msgs = 0
    while True:
        line = out.readline()
        if not line or b'"type":"result"' in line:
            break
        msgs += b"@@ts=" in line
    hwm = status(p.pid, "VmHWM")
    perf.send_signal(signal.SIGINT)
    _, err = perf.communicate()
    p.stdin.close()
    out.read()
    p.wait()
    res = {"mode": mode, "bin": os.path.basename(prog), "messages": msgs, "vmhwm_kb": hwm}
    for line in err.splitlines():
        f = line.split(",")
        if len(f) > 3 and f[0][:1].isdigit():
            name = f[2].replace("syscalls:sys_enter_", "").replace("sched:", "")
            # task-clock is in ms: per message, in µs
            res[name + ("_us" if name == "task-clock" else "")] = round(float(f[0]) / max(msgs, 1) * (1000 if name == "task-clock" else 1), 3)
    return res


def acp(fake, ccb):
    home, work = tempfile.mkdtemp(), tempfile.mkdtemp()
    env = dict(os.environ, HOME=home, CCBRIDGE_PERF_ACP_FAKE="1", CCBRIDGE_CLAUDE=fake,
               ANTHROPIC_API_KEY="sk-ant-fake", CCBRIDGE_LOG_LEVEL="warn")
    p = subprocess.Popen([ccb, "--ui", "acp"], cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=env, bufsize=0)
    out = io.BufferedReader(p.stdout, 1 << 20)

    def send(o):
        p.stdin.write((json.dumps(o) + "\n").encode())

    def answer(i):
        while True:
            line = out.readline()
            if not line:
                sys.exit("acp: the output ended")
            if b"@@ts=" in line:
                continue
            m = json.loads(line)
            if "method" in m and "id" in m:
                send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "not here"}})
            elif m.get("id") == i:
                return m

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1,
          "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}})
    answer(0)
    send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": work, "mcpServers": []}})
    sid = answer(1)["result"]["sessionId"]
    for i, text in ((2, "chunks=20000 rate=0"), (3, "chunks=1000 rate=500")):
        send({"jsonrpc": "2.0", "id": i, "method": "session/prompt",
              "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}})
        answer(i)
    kids = []
    for t in os.listdir(f"/proc/{p.pid}/task"):
        kids += open(f"/proc/{p.pid}/task/{t}/children").read().split()
    guardians = [int(k) for k in kids if os.readlink(f"/proc/{k}/exe") != os.path.realpath(fake)]
    res = {"mode": "acp", "bin": os.path.basename(ccb), "ccbridge_vmhwm_kb": status(p.pid, "VmHWM"),
           "guardian_vmhwm_kb": sum(status(g, "VmHWM") for g in guardians)}
    res["sum_kb"] = res["ccbridge_vmhwm_kb"] + res["guardian_vmhwm_kb"]
    p.stdin.close()
    out.read()
    p.wait()
    return res


def main():
    a = sys.argv[1:]
    if len(a) < 2 or a[0] not in ("dropin", "relay", "acp") or a[0] != "relay" and len(a) < 3:
        sys.exit(__doc__)
    if a[0] == "acp":
        res = acp(os.path.abspath(a[1]), os.path.abspath(a[2]))
    else:
        rest = a[2:] if a[0] == "relay" else a[3:]
        ccb = "" if a[0] == "relay" else os.path.abspath(a[2])
        res = paced(a[0], os.path.abspath(a[1]), ccb, int(rest[0]) if rest else 6000, int(rest[1]) if len(rest) > 1 else 2000)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
