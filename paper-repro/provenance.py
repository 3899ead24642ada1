"""The first lines of every results file: the command that made it, the commit, the date, the
machine and the thread counts, so a reader can reproduce (or discount) each figure."""
import datetime
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path


def _cpu():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _commit():
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        if subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD", "--", "src"]).returncode:
            commit += " (with uncommitted changes under src/)"
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return commit


# (read when the script starts, not when it writes its results: the tree may change meanwhile)
_COMMIT = _commit()
_STARTED = datetime.datetime.now(datetime.timezone.utc)


def header(threads):
    root = Path(__file__).resolve().parents[1]
    commit = _COMMIT
    command = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], root)] + sys.argv[1:])
    return [
        f"- command: `{command}`",
        f"- commit: {commit}",
        f"- date: {_STARTED:%Y-%m-%d %H:%M} UTC (start)",
        f"- machine: {_cpu()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}",
        f"- threads: {', '.join(str(t) for t in threads)} (each library limited to the same count)",
        "",
    ]
