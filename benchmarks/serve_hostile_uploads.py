"""The memory of `qkv serve` under hostile uploads (issue 22), against 127.0.0.1 only.

    python benchmarks/serve_hostile_uploads.py                 # the qkv on sys.path
    PYTHONPATH=/path/to/other/src python benchmarks/serve_hostile_uploads.py --label before

Starts `qkv serve --port 0 --no-translator` (MiniLM) as a child process, waits for its first answer,
then posts five saved traces of about 100 bytes that name a non-numeric dtype or an impossible
shape (``"dtype": "U50000000"`` with 3 and 8 values, "V400000000", "S100000000", a 2⁶² × 2⁶² shape):
each once cross-origin (``Origin: http://evil.example``, text/plain, as any web page could send
it) and once as the server's own page sends it. Prints each answer's status and the server's
resident-set high-water mark (VmHWM, /proc) before and after each upload. Bounded: a timeout per
request and the server stopped in every case.

Measured (2 busy cores; before = the code before issue 22): before, 165 → 1,692 MB and every
cross-origin post was processed; after, 165 → 166 MB and 166 → 167 MB in two runs, cross-origin
posts 403, the page's 400.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

HOST = "127.0.0.1"     # never anything else: this script talks to the server it started itself


def hostile_uploads() -> list[bytes]:
    docs = [{"name": "x", "values": list(range(n)), "shape": [n], "dtype": dtype}
            for dtype, n in (("U50000000", 3), ("U50000000", 8), ("V400000000", 2), ("S100000000", 4))]
    docs.append({"name": "x", "values": [], "shape": [0, 2**62, 2**62], "dtype": "float64"})
    return [json.dumps({"format": "qkv-trace", "steps": [doc]}).encode() for doc in docs]


def status_mb(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status") as handle:
        return int(re.search(rf"{key}:\s+(\d+)", handle.read()).group(1)) / 1024


def post(port: int, body: bytes, headers: dict) -> int:
    request = urllib.request.Request(f"http://{HOST}:{port}/api/upload?filename=t.json", data=body,
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="now", help="a word printed before each line (e.g. before, after)")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-m", "qkv.cli", "serve", "--host", HOST, "--port", "0",
                               "--no-translator"], stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        match = re.search(r":(\d+)/", line)
        if match is None:
            print(f"the server did not start: {line.strip()}", file=sys.stderr)
            return 1
        port = int(match.group(1))
        for _ in range(600):          # a server may print its line before it listens: wait, at most 60 s
            try:
                urllib.request.urlopen(f"http://{HOST}:{port}/api/models", timeout=120).read()
                break
            except urllib.error.URLError:
                time.sleep(0.1)
        print(f"{args.label}: start: VmRSS {status_mb(server.pid, 'VmRSS'):.0f} MB, "
              f"VmHWM {status_mb(server.pid, 'VmHWM'):.0f} MB")
        evil = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
        own = {"Origin": f"http://{HOST}:{port}", "Sec-Fetch-Site": "same-origin",
               "Content-Type": "application/octet-stream"}
        for n, body in enumerate(hostile_uploads()):
            statuses = post(port, body, evil), post(port, body, own)
            print(f"{args.label}: upload {n} ({len(body)} bytes): cross-origin {statuses[0]}, own page "
                  f"{statuses[1]}; VmHWM {status_mb(server.pid, 'VmHWM'):.0f} MB")
        print(f"{args.label}: end: VmRSS {status_mb(server.pid, 'VmRSS'):.0f} MB, "
              f"VmHWM {status_mb(server.pid, 'VmHWM'):.0f} MB")
        return 0
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


if __name__ == "__main__":
    sys.exit(main())
