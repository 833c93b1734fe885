#!/usr/bin/env python3
"""tests/oci/runtime/test_oci_runtime.py: corral-oci driven as an engine drives
it (conmon, containerd's shim): this process is a child subreaper, runs
`create` with the container's stdout and stderr as files, reads --pid-file,
`start`s, asks `state`, `kill`s, reaps the supervisor it adopted for the
container's exit status, and `delete`s. Real boxes on the Debian 12 root
tools/test.sh builds; root only (exit 77 with the reason otherwise).

Each case checks what the host saw: the record under --root, the run's
run.json in corral's state dir, and no process of the box's UID left."""
import ctypes, json, os, shutil, signal, socket, subprocess, sys, tempfile, time

OCI = os.environ.get("CORRAL_OCI_BIN", "")
ROOTFS = "/var/cache/corral-test/debian12-root/root"
UID_RANGE = "1900101100-1900101129"

if os.geteuid() != 0:
    print("SKIP: needs root (corral-oci builds real boxes)", file=sys.stderr); sys.exit(77)
if not os.path.isfile(os.path.join(ROOTFS, "bin/sh")):
    print("SKIP: no Debian 12 root at " + ROOTFS + " (tools/test.sh builds it: tools/build-debian-root.sh)", file=sys.stderr)
    sys.exit(77)
if not os.access(OCI, os.X_OK):
    print("FAIL: CORRAL_OCI_BIN is not an executable: " + OCI, file=sys.stderr); sys.exit(1)

PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

TMP = tempfile.mkdtemp(prefix="corral-oci-test.")
ROOT = os.path.join(TMP, "oci-root")
STATE = os.path.join(TMP, "state")
os.makedirs(STATE, mode=0o700)
GLOBAL = ["--root", ROOT, "--state-dir", STATE, "--uid-range", UID_RANGE]
failures, passes = [], 0


def check(ok, what, detail=""):
    global passes
    if ok:
        passes += 1; print("ok: " + what)
    else:
        failures.append(what); print("FAIL: " + what + (": " + detail if detail else ""), file=sys.stderr)


def oci(*args, log=None):
    argv = [OCI] + GLOBAL + (["--log", log, "--log-format", "json"] if log else []) + list(args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def config(args, **changes):
    c = {"ociVersion": "1.0.2", "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": args,
         "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "GREETING=hello"], "cwd": "/srv/app"},
         "root": {"path": ROOTFS, "readonly": True}, "hostname": "oci-box",
         "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
         "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"},
                                  {"type": "mount"}]}}
    for k, v in changes.items():
        c[k] = v
    return c


def bundle(name, cfg):
    d = os.path.join(TMP, "bundles", name)
    os.makedirs(d)
    if cfg is not None:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return d


class Container:
    """One container's create, as an engine runs it: its stdio are files."""
    def __init__(self, cid, cfg, extra=()):
        self.id, self.dir = cid, bundle(cid, cfg)
        self.pid_file = os.path.join(self.dir, "pid")
        self.out, self.err = os.path.join(self.dir, "out"), os.path.join(self.dir, "err")
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.create = subprocess.run([OCI] + GLOBAL + ["create", "--bundle", self.dir, "--pid-file", self.pid_file,
                                          ] + list(extra) + [cid], stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                         timeout=120)
        self.pid = int(open(self.pid_file).read()) if self.create.returncode == 0 else 0

    def state(self):
        r = oci("state", self.id)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def reap(self, bound=60):
        """The supervisor's wait status, as conmon reaps it (we are its subreaper)."""
        until = time.time() + bound
        while time.time() < until:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        return None

    def record(self):
        with open(os.path.join(ROOT, self.id, "record.json")) as f:
            return json.load(f)

    def text(self, which):
        with open(self.out if which == "out" else self.err) as f:
            return f.read()


def uid_processes(uid):
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.stat("/proc/" + p).st_uid == uid:
                    found.append(p)
            except FileNotFoundError:
                pass
    return found


def run_json(c):
    with open(os.path.join(c.record()["run_dir"], "run.json")) as f:
        return json.load(f)


def wait_output(c, text, bound=30):
    """Until the container's stdout holds `text` (bounded)."""
    until = time.time() + bound
    while text not in c.text("out") and time.time() < until:
        time.sleep(0.05)


def wait_status(c, want, bound=60):
    until = time.time() + bound
    while time.time() < until:
        s = c.state()
        if s and s["status"] == want:
            return s
        time.sleep(0.05)
    return c.state()


def case_lifecycle():
    """create → created (the process not yet run), start → its output and
    exit status, state → stopped, delete → nothing left."""
    c = Container("life", config(["/bin/sh", "-c", 'echo "out $GREETING $(pwd) $(hostname) $(id -u)"; echo err >&2; exit 3']))
    check(c.create.returncode == 0, "create: exit 0", c.text("err"))
    if c.create.returncode != 0:
        return
    s = c.state()
    check(s and s["status"] == "created" and s["pid"] == c.pid, "state after create: created, pid = --pid-file's", str(s))
    check(s and s["bundle"] == c.dir and s["id"] == "life" and s["ociVersion"].startswith("1."), "state: id, bundle, ociVersion")
    check(c.text("out") == "", "the process has not run before start")
    uid = run_json(c)["uid"]
    check(uid >= 1900101100, "the box leased a UID of --uid-range", str(uid))
    r = oci("start", "life")
    check(r.returncode == 0, "start: exit 0", r.stderr)
    status = c.reap()
    check(status == 3, "the supervisor's exit status is the process's (3), as conmon reaps it", str(status))
    out = c.text("out")
    check(out.startswith("out hello /srv/app oci-box "), "the process's stdout: env, cwd, hostname from config.json", out)
    check((out.split() or ["0"])[-1] != "0", "the process is not root in the box (mapped to the leased UID)", out)
    check(c.text("err") == "err\n", "the process's stderr, alone", c.text("err"))
    s = c.state()
    check(s and s["status"] == "stopped" and "pid" not in s, "state after the end: stopped, no pid", str(s))
    rec = run_json(c)
    check(rec.get("kind") == "oci" and rec.get("oci_container") == "life", "run.json: kind oci, the container's id",
          str(rec.get("kind")) + " " + str(rec.get("oci_container")))
    ps = subprocess.run([os.environ.get("CORRAL_BIN", "corral"), "ps", "-a", "--json", "--state-dir", STATE],
                        capture_output=True, text=True)
    listed = [e for e in (json.loads(ps.stdout) if ps.returncode == 0 else []) if e.get("id") == rec.get("id")]
    check(len(listed) == 1 and listed[0].get("kind") == "oci", "corral ps -a lists the container's run as kind oci",
          ps.stdout[-300:] + ps.stderr)
    check(rec.get("outcome") == "exited" and rec.get("exit_code") == 3, "run.json: outcome exited, exit_code 3",
          str(rec.get("outcome")) + " " + str(rec.get("exit_code")))
    check(os.path.isfile(os.path.join(c.record()["run_dir"], "oci-config.json")), "the mapping's notes are in the run dir")
    r = oci("start", "life")
    check(r.returncode == 1 and "stopped" in r.stderr, "start of a stopped container: exit 1, says stopped", r.stderr)
    r = oci("delete", "life")
    check(r.returncode == 0, "delete: exit 0", r.stderr)
    check(not os.path.exists(os.path.join(ROOT, "life")), "delete: the record is gone")
    check(uid_processes(uid) == [], "no process of the box's UID is left")
    r = oci("state", "life")
    check(r.returncode == 1 and "does not exist" in r.stderr, "state after delete: exit 1, does not exist", r.stderr)


def case_kill_term_and_user_signal():
    c = Container("term", config(["/bin/sleep", "1000"]))
    if c.create.returncode != 0:
        return check(False, "create (term)", c.text("err"))
    oci("start", "term")
    check((wait_status(c, "running") or {}).get("status") == "running", "state after start: running")
    r = oci("delete", "term")
    check(r.returncode == 1 and "running" in r.stderr and "--force" in r.stderr,
          "delete of a running container: exit 1, names --force", r.stderr)
    r = oci("kill", "term", "TERM")
    check(r.returncode == 0, "kill TERM: exit 0", r.stderr)
    status = c.reap()
    check(status == 128 + signal.SIGTERM, "kill TERM: the process died of SIGTERM (143)", str(status))
    check(oci("delete", "term").returncode == 0, "delete after kill")

    trap = 'trap "echo got-usr1; exit 7" USR1; echo ready; while :; do sleep 0.1; done'
    u = Container("usr1", config(["/bin/sh", "-c", trap]))
    if u.create.returncode != 0:
        return check(False, "create (usr1)", u.text("err"))
    oci("start", "usr1")
    wait_output(u, "ready")
    r = oci("kill", "usr1", "SIGUSR1")
    check(r.returncode == 0, "kill SIGUSR1: exit 0", r.stderr)
    status = u.reap()
    check(status == 7 and "got-usr1" in u.text("out"), "kill USR1 reaches the process itself (its trap ran, exit 7)",
          str(status) + " " + u.text("out"))
    oci("delete", "usr1")


def case_exec():
    """exec into a running container: the process's output and status, with
    --detach the waiter's pid reaped; refused for a created one."""
    c = Container("execs", config(["/bin/sleep", "1000"]))
    if c.create.returncode != 0:
        return check(False, "create (execs)", c.text("err"))
    r = oci("exec", "execs", "/bin/true")
    check(r.returncode == 1 and "not running" in r.stderr, "exec into a created container: exit 1, not running", r.stderr)
    oci("start", "execs")
    wait_status(c, "running")
    r = oci("ps", "--format", "json", "execs")
    pids = json.loads(r.stdout) if r.returncode == 0 else []
    comms = [open("/proc/%d/comm" % p).read().strip() for p in pids if os.path.exists("/proc/%d" % p)]
    check("sleep" in comms and c.pid not in pids, "ps --format json: the box's processes (sleep), not the supervisor",
          r.stdout + r.stderr + str(comms))
    r = oci("ps", "execs", "-e", "-o", "pid,args")
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and lines[:1] and lines[0].split()[0] == "PID" and
          any(l.split()[1:] == ["/bin/sleep", "1000"] for l in lines[1:]) and len(lines) == 1 + len(pids),
          "ps ID -e -o pid,args: the host's ps, its header and the box's lines only", r.stdout + r.stderr)
    r = oci("list", "--format", "json")
    listed = [e for e in (json.loads(r.stdout) if r.returncode == 0 else []) if e.get("id") == "execs"]
    check(len(listed) == 1 and listed[0]["status"] == "running" and listed[0]["pid"] == c.pid and
          listed[0]["bundle"] == c.dir and listed[0]["created"].endswith("Z"),
          "list --format json: the running container, its supervisor's pid, bundle and created time", r.stdout + r.stderr)
    r = oci("list", "-q")
    check(r.returncode == 0 and "execs" in r.stdout.split(), "list -q: the ids", r.stdout + r.stderr)
    r = oci("list")
    check(r.returncode == 0 and r.stdout.split()[:6] == ["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"] and
          any(l.split()[:3] == ["execs", str(c.pid), "running"] for l in r.stdout.splitlines()),
          "list: runc's columns, the container's row", r.stdout + r.stderr)
    r = oci("ps", "execs", "-o", "args")
    check(r.returncode == 1 and "PID column" in r.stderr, "ps without a PID column: refused, naming it", r.stderr)
    r = oci("exec", "--env", "WHO=exec", "--cwd", "/tmp", "execs", "/bin/sh", "-c",
            'echo "$WHO $(pwd) $(id -u)"; echo to-err >&2; exit 4')
    check(r.returncode == 4, "exec: its exit status (4)", str(r.returncode) + " " + r.stderr)
    check(r.stdout.startswith("exec /tmp ") and r.stdout.split()[-1] != "0", "exec: its stdout, env and cwd", r.stdout)
    check(r.stderr == "to-err\n", "exec: its stderr", r.stderr)
    proc = os.path.join(c.dir, "process.json")
    with open(proc, "w") as f:
        json.dump({"args": ["/bin/sh", "-c", "sleep 0.3; echo detached-out; exit 6"], "cwd": "/", "env": ["PATH=/bin"],
                   "user": {"uid": 0, "gid": 0}}, f)
    pid_file, out = os.path.join(c.dir, "exec.pid"), os.path.join(c.dir, "exec.out")
    with open(out, "w") as o:
        r = subprocess.run([OCI] + GLOBAL + ["exec", "--process", proc, "--detach", "--pid-file", pid_file, "execs"],
                           stdout=o, stderr=subprocess.PIPE, text=True, timeout=60)
    check(r.returncode == 0, "exec --detach --process: exit 0 once started", r.stderr)
    waiter = int(open(pid_file).read()) if os.path.exists(pid_file) else 0
    status = None
    until = time.time() + 60
    while waiter and time.time() < until:
        pid, st = os.waitpid(waiter, os.WNOHANG)
        if pid == waiter:
            status = os.waitstatus_to_exitcode(st)
            break
        time.sleep(0.05)
    check(status == 6, "exec --detach: the --pid-file's waiter exits with the process's status (6)", str(status))
    check(open(out).read() == "detached-out\n", "exec --detach: the process wrote to the caller's stdout")
    check(os.path.isfile(os.path.join(c.record()["run_dir"], "execs", "2", "stdout.log")),
          "each exec's output is logged in the run dir (execs/N)")
    r = oci("delete", "--force", "execs")
    check(r.returncode == 0 and c.reap() == 128 + signal.SIGKILL, "delete --force of a container with execs")


def case_force_and_early_kill():
    c = Container("force", config(["/bin/sleep", "1000"]))
    if c.create.returncode != 0:
        return check(False, "create (force)", c.text("err"))
    oci("start", "force")
    wait_status(c, "running")
    uid = run_json(c)["uid"]
    r = oci("delete", "--force", "force")
    check(r.returncode == 0, "delete --force of a running container: exit 0", r.stderr)
    check(c.reap() == 128 + signal.SIGKILL, "delete --force: SIGKILL (137)")
    check(not os.path.exists(os.path.join(ROOT, "force")) and uid_processes(uid) == [],
          "delete --force: record gone, no process of the UID left")

    e = Container("early", config(["/bin/sh", "-c", "echo must-not-run"]))
    if e.create.returncode != 0:
        return check(False, "create (early)", e.text("err"))
    r = oci("kill", "early", "KILL")
    check(r.returncode == 0, "kill of a created container: exit 0", r.stderr)
    check(e.reap() == 128 + signal.SIGKILL and e.text("out") == "",
          "kill before start: the box ends (137) and the process never ran", e.text("out"))
    check((e.state() or {}).get("status") == "stopped", "kill before start: stopped")
    check(oci("delete", "early").returncode == 0, "delete after an early kill")
    r = oci("kill", "early", "KILL")
    check(r.returncode == 1 and "does not exist" in r.stderr, "kill of a deleted container: exit 1")


def case_lost_supervisor():
    """A supervisor killed with SIGKILL (as a crash or an OOM kill would):
    state says stopped, delete recovers the lost run and removes the record."""
    c = Container("lost", config(["/bin/sleep", "1000"]))
    if c.create.returncode != 0:
        return check(False, "create (lost)", c.text("err"))
    oci("start", "lost")
    wait_status(c, "running")
    uid, run_dir = run_json(c)["uid"], c.record()["run_dir"]
    os.kill(c.pid, signal.SIGKILL)
    check(c.reap() == -signal.SIGKILL, "the supervisor died of SIGKILL")
    check((c.state() or {}).get("status") == "stopped", "state of a container whose supervisor is gone: stopped")
    log = os.path.join(TMP, "lost.log")
    r = oci("delete", "lost", log=log)
    check(r.returncode == 0, "delete of a lost container: exit 0", r.stderr)
    check(not os.path.exists(os.path.join(ROOT, "lost")), "delete of a lost container: the record is gone")
    until = time.time() + 10
    while uid_processes(uid) and time.time() < until:
        time.sleep(0.05)
    check(uid_processes(uid) == [], "no process of the lost box's UID is left")
    with open(os.path.join(run_dir, "journal.jsonl")) as f:
        last = f.read().strip().splitlines()[-1]
    check("supervisor lost" in last, "the lost run's journal ends with the recovered record", last[:200])
    check(os.path.exists(log) and "lost run" in open(log).read(), "delete says in --log that the run was lost")


def case_console():
    """process.terminal: refused without --console-socket; with one, the pty's
    master arrives (as conmon receives it) before create returns, the
    process's stdio is that pty, at consoleSize, and its status is reaped."""
    cfg = config(["/bin/sh", "-c", "tty; stty size; exit 9"])
    cfg["process"]["terminal"] = True
    cfg["process"]["consoleSize"] = {"height": 24, "width": 80}
    r = oci("create", "--bundle", bundle("tty-nosock", cfg), "tty-nosock")
    check(r.returncode == 1 and "--console-socket" in r.stderr, "terminal without --console-socket: refused", r.stderr)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(TMP, "console.sock"))
    listener.listen(1)
    listener.settimeout(30)
    c = Container("tty", cfg, ["--console-socket", os.path.join(TMP, "console.sock")])
    if c.create.returncode != 0:
        return check(False, "create with a console socket", c.text("err"))
    conn, _ = listener.accept()
    name, fds, _, _ = socket.recv_fds(conn, 256, 1)
    check(name.startswith(b"/dev/pts/") and len(fds) == 1, "the console socket got the master and the pty's name",
          repr(name))
    if not fds:
        return
    oci("start", "tty")
    shown = b""
    while True:
        try:
            data = os.read(fds[0], 4096)
        except OSError:  # EIO: the process, the slave's last holder, has exited
            break
        if not data:
            break
        shown += data
    lines = shown.decode(errors="replace").replace("\r", "").splitlines()
    check(lines[:2] == [name.decode(), "24 80"], "the process's stdio is that pty, at consoleSize", repr(lines))
    check(c.reap() == 9, "the process's status through the supervisor (9)")
    r = oci("delete", "tty")
    check(r.returncode == 0, "delete after a console", r.stderr)
    os.close(fds[0])
    conn.close()
    listener.close()


def case_seccomp():
    """linux.seccomp is stacked after corral's filter: what it denies fails
    with its errno (mkdir, EACCES) in the process and in an exec; the rest
    runs."""
    cfg = config(["/bin/sh", "-c", "mkdir /tmp/denied; echo mkdir=$?; sleep 1000"])
    cfg["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                               "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO",
                                             "errnoRet": 13}]}
    c = Container("seccomp", cfg)
    if c.create.returncode != 0:
        return check(False, "create (seccomp)", c.text("err"))
    oci("start", "seccomp")
    wait_output(c, "mkdir=")
    check("mkdir=1" in c.text("out") and "Permission denied" in c.text("err"),
          "the profile's denial in the process: mkdir fails with its errno (EACCES)", c.text("out") + c.text("err"))
    r = oci("exec", "seccomp", "/bin/sh", "-c", "mkdir /tmp/again; echo exec-mkdir=$?; echo ok > /tmp/file; cat /tmp/file")
    check("exec-mkdir=1" in r.stdout and r.stdout.strip().endswith("ok") and "Permission denied" in r.stderr,
          "the profile applies to an exec too, and the rest runs", r.stdout + r.stderr)
    r = oci("delete", "--force", "seccomp")
    check(r.returncode == 0, "delete --force (seccomp)", r.stderr)
    c.reap()


def case_noexec_bind():
    """A bind with noexec: nothing on it runs; the same directory bound
    without it runs the same script."""
    src = os.path.join(TMP, "bind-src")
    os.makedirs(src)
    with open(os.path.join(src, "run.sh"), "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(os.path.join(src, "run.sh"), 0o755)
    os.chmod(src, 0o755)
    cfg = config(["/bin/sh", "-c", "/data/run.sh; echo data=$?; /code/run.sh; echo code=$?"])
    cfg["mounts"] = cfg["mounts"] + [
        {"destination": "/data", "type": "bind", "source": src, "options": ["bind", "noexec"]},
        {"destination": "/code", "type": "bind", "source": src, "options": ["bind", "ro"]}]
    c = Container("noexec", cfg)
    if c.create.returncode != 0:
        return check(False, "create (noexec bind)", c.text("err"))
    oci("start", "noexec")
    check(c.reap() == 0, "the process ran (noexec bind)")
    out = c.text("out")
    check("data=126" in out and "ran\ncode=0" in out, "noexec bind: its script is refused (126); the exec bind runs it",
          out + c.text("err"))
    oci("delete", "noexec")


def case_refusals():
    """Bad bundles: each a clear error naming what, and nothing left behind."""
    base = config(["/bin/true"])
    cases = {
        "no-config": (None, "no config.json"),
        "bad-json": ('{"ociVersion": "1.0.2", ', "config.json"),
        "dotdot-root": (dict(base, root={"path": "/srv/../etc"}), "root.path"),
        "over-proc": (dict(base, mounts=base["mounts"] + [{"destination": "/proc/sys", "type": "bind",
                                                          "source": "/tmp", "options": ["bind"]}]), "mounts[1]"),
        "sys-admin": (dict(base, process=dict(base["process"], capabilities={"bounding": ["CAP_SYS_ADMIN"]})),
                      "CAP_SYS_ADMIN"),
        "device": (dict(base, linux=dict(base["linux"], devices=[{"path": "/dev/sda", "type": "b", "major": 8,
                                                                    "minor": 0}])), "linux.devices"),
        "userns": (dict(base, linux=dict(base["linux"], namespaces=base["linux"]["namespaces"] + [{"type": "user"}],
                                         uidMappings=[{"containerID": 0, "hostID": 100000, "size": 65536}])), "user"),
        "unlisted-config": (dict(base, annotations={"io.corral.worker": "w", "io.corral.config": "/srv/org"}),
                            "not allowed on this node"),
    }
    before = set(os.listdir(os.path.join(STATE, "runs"))) if os.path.isdir(os.path.join(STATE, "runs")) else set()
    for name, (cfg, needle) in cases.items():
        d = bundle("bad-" + name, cfg)
        log = os.path.join(TMP, name + ".log")
        r = oci("create", "--bundle", d, "bad-" + name, log=log)
        last = open(log).read().strip().splitlines()[-1] if os.path.exists(log) else "{}"
        entry = json.loads(last)
        check(r.returncode == 1 and needle in r.stderr and entry.get("level") == "error" and needle in entry.get("msg", ""),
              "refused: " + name + " (exit 1, names " + needle + ", the --log's last JSON line says it)", r.stderr)
        check(not os.path.exists(os.path.join(ROOT, "bad-" + name)), "refused: " + name + " leaves no record")
    after = set(os.listdir(os.path.join(STATE, "runs"))) if os.path.isdir(os.path.join(STATE, "runs")) else set()
    check(after == before, "refused bundles leave no run behind", str(after - before))
    c = Container("dup", config(["/bin/sleep", "1000"]))
    r = oci("create", "--bundle", c.dir, "dup")
    check(r.returncode == 1 and "exists" in r.stderr, "a second create of one id: exit 1, exists", r.stderr)
    oci("delete", "--force", "dup")
    c.reap()


def case_features_version():
    r = oci("features")
    f = json.loads(r.stdout) if r.returncode == 0 else {}
    check(f.get("ociVersionMax") == "1.2.0" and "hooks" in f, "features: the spec's document", r.stderr)
    r = subprocess.run([OCI, "--version"], capture_output=True, text=True)
    check(r.returncode == 0 and "spec: 1.2.0" in r.stdout, "--version: names the spec", r.stdout)
    r = oci("pause", "x")
    check(r.returncode == 1 and "pause" in r.stderr, "pause: refused with the reason", r.stderr)


try:
    for case in (case_lifecycle, case_kill_term_and_user_signal, case_exec, case_force_and_early_kill,
                 case_lost_supervisor,
                 case_console,
                 case_seccomp,
                 case_noexec_bind,
                 case_refusals,
                 case_features_version):
        case()
finally:
    for cid in os.listdir(ROOT) if os.path.isdir(ROOT) else []:
        oci("delete", "--force", cid)
    shutil.rmtree(TMP, ignore_errors=True)
print("%d passed, %d failed" % (passes, len(failures)))
sys.exit(1 if failures else 0)
