"""Running the real zot binary against extensions written with the SDK:
extension directories, `zot rpc` sessions, `zot --json` runs and
`zot ext …` commands, each with a deadline and no process left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

SDK_DIR = Path(__file__).resolve().parents[1]
REPO_DIR = SDK_DIR.parents[1]
EXAMPLES_DIR = REPO_DIR / "examples" / "extensions"

#: Deadline for a whole prompt (model round trips, tools, intercepts).
PROMPT_TIMEOUT = 30.0
#: Deadline for short exchanges (a response to a request, `zot ext` commands).
SHORT_TIMEOUT = 15.0
#: How long zot may take to exit after stdin closes (shutdown grace is 2 s + 1 s).
EXIT_TIMEOUT = 10.0


def make_extension(parent: Path, name: str, code: str, *, version: str = "1.0.0") -> Path:
    """Writes ``parent/name`` with a manifest, the Python ``code`` and a
    launcher that runs it with this interpreter and the SDK on the path."""
    ext_dir = parent / name
    ext_dir.mkdir(parents=True)
    (ext_dir / "extension.json").write_text(
        json.dumps({"name": name, "version": version, "exec": "./run", "language": "python"})
    )
    (ext_dir / "main.py").write_text(textwrap.dedent(code))
    launcher = ext_dir / "run"
    launcher.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{SDK_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
        "export PYTHONPATH\n"
        f'exec "{sys.executable}" "$(dirname "$0")/main.py"\n'
    )
    launcher.chmod(0o755)
    return ext_dir


def descendants(pid: int) -> List[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces.
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: List[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_all(pids: Sequence[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Env:
    """A temporary ZOT_HOME, HOME and project directory, and the zot binary."""

    def __init__(self, zot_bin: str, root: Path, model_url: str) -> None:
        self.zot_bin = zot_bin
        self.root = root
        self.home = root / "zot-home"
        self.project = root / "project"
        self.trace = root / "frames.jsonl"
        self.model_url = model_url
        for d in (self.home, self.project, root / "user-home"):
            d.mkdir(parents=True, exist_ok=True)
        self.vars: Dict[str, str] = {
            k: v for k, v in os.environ.items() if not k.startswith(("ZOT", "OPENAI", "ANTHROPIC", "XDG_"))
        }
        self.vars.update(
            ZOT_HOME=str(self.home),
            HOME=str(root / "user-home"),
            ZOT_EXT_TRACE=str(self.trace),
            PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        )
        self.processes: List[Zot] = []

    def model_args(self) -> List[str]:
        return [
            "--provider", "openai", "--api-key", "test", "--base-url", self.model_url,
            "--model", "gpt-4.1", "--no-session", "--no-skills",
        ]  # fmt: skip

    def command(
        self, args: Sequence[str], timeout: float = SHORT_TIMEOUT, **env: str
    ) -> subprocess.CompletedProcess:
        """Runs ``zot args…`` in the project directory to completion."""
        return subprocess.run(
            [self.zot_bin, *args],
            cwd=self.project,
            env={**self.vars, **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def doctor(self, *exts: Path, **env: str) -> Dict[str, Any]:
        args = ["ext", "doctor", "--json"]
        for ext in exts:
            args += ["--ext", str(ext)]
        done = self.command(args, **env)
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise AssertionError(
                f"doctor printed no JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
            ) from None

    def run_json(
        self, prompt: str, *exts: Path, timeout: float = PROMPT_TIMEOUT, extra: Sequence[str] = ()
    ) -> List[Dict[str, Any]]:
        """``zot --json prompt`` with the mock model; every event it printed."""
        args = ["--json", *self.model_args(), *extra]
        for ext in exts:
            args += ["--ext", str(ext)]
        done = self.command([*args, "--", prompt], timeout=timeout)
        events = []
        for line in done.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                raise AssertionError(
                    f"zot --json printed a non-JSON line {line!r}; stderr:\n{done.stderr}"
                ) from None
        return events

    def rpc(self, *exts: Path, extra: Sequence[str] = ()) -> Zot:
        args = ["rpc", *self.model_args(), *extra]
        for ext in exts:
            args += ["--ext", str(ext)]
        zot = Zot(self, args)
        self.processes.append(zot)
        return zot

    def records(self, ext: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every frame the SDK traced, in order: ``{"ext", "dir", "frame"}``
        with ``dir`` ``send`` (written to zot) or ``recv`` (read from it)."""
        if not self.trace.exists():
            return []
        records = [json.loads(line) for line in self.trace.read_text().splitlines()]
        return [r for r in records if ext is None or r["ext"] == ext]

    def frames(self, direction: str = "send", ext: Optional[str] = None) -> List[Dict[str, Any]]:
        return [r["frame"] for r in self.records(ext) if r["dir"] == direction]

    def log(self, name: str) -> str:
        path = self.home / "logs" / f"ext-{name}.log"
        return path.read_text() if path.exists() else ""

    def log_when(self, name: str, ready: Callable[[str], bool], timeout: float = SHORT_TIMEOUT) -> str:
        """The extension's log once ``ready`` holds for it, or as it is at the
        deadline: zot writes what an extension prints on stderr as it reads
        it, apart from its frames, so a line may land after the frame that
        followed it."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.log(name)
            if ready(text) or time.monotonic() > deadline:
                return text
            time.sleep(0.01)

    def close(self) -> None:
        for zot in self.processes:
            zot.close()


class Zot:
    """A running ``zot rpc``: requests, the event stream, and a clean exit."""

    def __init__(self, env: Env, args: List[str]) -> None:
        self.env = env
        self.stderr_path = env.root / f"zot-stderr-{len(env.processes)}.txt"
        self._stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(
            [env.zot_bin, *args],
            cwd=env.project,
            env=env.vars,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
        )
        self.lines: List[Dict[str, Any]] = []
        self._cond = threading.Condition()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, name="zot-rpc-reader", daemon=True)
        self._reader.start()
        self.children: List[int] = []

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                value = json.loads(raw)
            except ValueError:
                value = {"type": "__not_json__", "line": raw.decode(errors="replace")}
            with self._cond:
                self.lines.append(value)
                self._cond.notify_all()
        with self._cond:
            self.lines.append({"type": "__eof__"})
            self._cond.notify_all()

    def describe(self) -> str:
        stderr = self.stderr_path.read_text() if self.stderr_path.exists() else ""
        lines = "\n".join(json.dumps(v) for v in self.lines[-40:])
        return f"zot stdout (last lines):\n{lines}\nzot stderr:\n{stderr}"

    def send(self, value: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(value) + "\n").encode())
        self.proc.stdin.flush()

    def wait_for(
        self, pred: Callable[[Dict[str, Any]], bool], start: int = 0, timeout: float = SHORT_TIMEOUT
    ) -> int:
        """Index of the first line at or after ``start`` that matches ``pred``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in range(start, len(self.lines)):
                    if pred(self.lines[i]):
                        return i
                    if self.lines[i]["type"] == "__eof__":
                        raise AssertionError(f"zot exited while waiting\n{self.describe()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout}s\n{self.describe()}")
                self._cond.wait(left)

    def request(self, type: str, timeout: float = SHORT_TIMEOUT, **fields: Any) -> Dict[str, Any]:
        self._next_id += 1
        id_ = f"req-{self._next_id}"
        self.send({"id": id_, "type": type, **fields})
        i = self.wait_for(lambda v: v.get("type") == "response" and v.get("id") == id_, timeout=timeout)
        return self.lines[i]

    def prompt(self, message: str, timeout: float = PROMPT_TIMEOUT) -> List[Dict[str, Any]]:
        """Sends a prompt and returns every line up to and including its ``done``."""
        with self._cond:
            mark = len(self.lines)
        response = self.request("prompt", message=message)
        assert response["success"], f"prompt refused: {response}\n{self.describe()}"
        end = self.wait_for(lambda v: v.get("type") == "done", start=mark, timeout=timeout)
        with self._cond:
            return [v for v in self.lines[mark : end + 1] if v.get("type") != "response"]

    def events_since(self, mark: int) -> List[Dict[str, Any]]:
        with self._cond:
            return list(self.lines[mark:])

    def extension_pids(self) -> List[int]:
        return descendants(self.proc.pid)

    def close(self) -> Optional[int]:
        """Closes stdin and waits for zot to exit; kills whatever is left."""
        if self.proc.poll() is None:
            self.children = self.extension_pids()
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            code: Optional[int] = self.proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            code = None
        leftovers = [p for p in self.children if alive(p)]
        if code is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait(5)
        kill_all(leftovers)
        self._reader.join(5)
        self._stderr.close()
        return code
