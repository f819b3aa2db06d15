"""Runs the pnec command for an algorithm: progress into the feedback,
Cancel as SIGTERM (pnec stops cleanly and leaves no partial file)."""

import os
import queue
import re
import shutil
import signal
import subprocess
import threading

from qgis.core import QgsProcessingException


def pnec_binary():
    """The pnec executable: $PNEC_BINARY, else pnec on PATH; None if neither."""
    b = os.environ.get("PNEC_BINARY")
    if b:
        return b if os.path.isfile(b) and os.access(b, os.X_OK) else None
    return shutil.which("pnec")


# pnec's progress lines when standard error is not a terminal:
#   classify:  "classify scene.tif: tile 3/16, 787.5k of 4.2M px (18.8%), 90.1k px/s, ETA 38s"
#   train:     'time=... level=INFO msg=train progress="epoch 10/200" loss=...'
#   batch:     'msg=batch inputs=3 shard=... scenes=3 ...', 'msg=tile scene=... progress="tile 3/16, ... (18.8%) ..."',
#              'msg="scene done" ...' (also "scene up to date", "scene failed", "scene stopped")
_PERCENT = re.compile(r"tile \d+/\d+, .*?\((\d+(?:\.\d+)?)%\)")
_EPOCH = re.compile(r'progress="epoch (\d+)/(\d+)"')
_SCENES = re.compile(r"msg=batch .*\bscenes=(\d+)")
_SCENE_END = re.compile(r'msg="scene (done|up to date|failed|stopped)"')


class Progress:
    """Turns pnec's lines into a percentage (None when a line says nothing)."""

    def __init__(self):
        self.scenes = 0  # of a batch, once it says
        self.ended = 0
        self.within = 0.0  # the current scene's fraction

    def update(self, line):
        m = _EPOCH.search(line)
        if m:
            return 100.0 * int(m.group(1)) / max(int(m.group(2)), 1)
        m = _SCENES.search(line)
        if m:
            self.scenes = int(m.group(1))
            return 0.0
        if _SCENE_END.search(line):
            self.ended += 1
            self.within = 0.0
            return 100.0 * self.ended / self.scenes if self.scenes else None
        m = _PERCENT.search(line)
        if m:
            pct = float(m.group(1))
            if self.scenes:  # a batch: the scene's share of the run
                self.within = pct / 100.0
                return 100.0 * (self.ended + self.within) / self.scenes
            return pct
        return None


def run_pnec(args, feedback, env=None):
    """Runs pnec with args, streaming its output into feedback. Returns the
    exit status and the last 'pnec: ...' error line. Raises
    QgsProcessingException when cancelled (after pnec has stopped)."""
    exe = pnec_binary()
    if exe is None:
        raise QgsProcessingException("pnec was not found: install it on PATH or set PNEC_BINARY to its path")
    feedback.pushCommandInfo(" ".join([exe] + [_quote(a) for a in args]))
    proc = subprocess.Popen([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, bufsize=1, env=env)
    lines = queue.Queue()

    def read(stream, name):
        for line in stream:
            lines.put((name, line.rstrip("\n")))
        lines.put((name, None))

    readers = [threading.Thread(target=read, args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=read, args=(proc.stderr, "err"), daemon=True)]
    for r in readers:
        r.start()
    progress = Progress()
    open_streams, stopping, error = 2, False, ""
    while open_streams:
        if feedback.isCanceled() and not stopping:
            feedback.pushInfo("Cancelled: stopping pnec (SIGTERM)")
            proc.send_signal(signal.SIGTERM)
            stopping = True
        try:
            name, line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            open_streams -= 1
            continue
        if not line:
            continue
        if name == "err" and line.startswith("pnec: "):
            error = line
        pct = progress.update(line)
        if pct is not None:
            feedback.setProgress(min(max(pct, 0.0), 100.0))
        if name == "out":
            feedback.pushConsoleInfo(line)
        else:
            feedback.pushInfo(line)
    code = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    if stopping:
        raise QgsProcessingException("Cancelled: pnec stopped (exit status %d); nothing partial was left" % code)
    return code, error


def _quote(a):
    return a if re.fullmatch(r"[\w@%+=:,./-]+", a) else "'" + a.replace("'", "'\\''") + "'"
