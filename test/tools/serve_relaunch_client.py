"""tfm-serve --relaunch in front of a model split over ranks, and a rank
killed (kill -9) during a streamed request:

    serve_relaunch_client.py TFM_SERVE "LAUNCHER" LIBRARY

The stream in flight ends within a bound (no hang), new requests are
answered 503 while the job is down, mpirun's message names the lost rank,
the supervisor starts the ranks again, and they serve the same completion
as before; SIGTERM then ends the supervisor and its job."""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

from serve_client import get
from serve_process import post

PROMPT = {"model": "model", "prompt": "Once upon a time", "max_tokens": 16,
          "temperature": 0}


def processes_of(library, rank):
    """The pids of tfm-serve processes of this test's LIBRARY that run as
    MPI rank `rank`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                environment = f.read().split(b"\0")
        except OSError:
            continue
        if (library.encode() in command and
                f"OMPI_COMM_WORLD_RANK={rank}".encode() in environment):
            found.append(int(pid))
    return found


def wait_until(condition, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.05)
    return None


def main():
    serve, launcher, library = sys.argv[1:4]
    errors = open(os.path.join(os.path.dirname(library), "supervisor.err"),
                  "w+")
    supervisor = subprocess.Popen(
        [serve, "--relaunch", launcher, library, "--port", "0",
         "--max-sequences", "4"],
        stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        check(supervisor, library, errors)
    finally:
        # A failed check must not leave the supervisor relaunching its job
        # behind the test (the next run's rank count would be off).
        if supervisor.poll() is None:
            supervisor.terminate()
            try:
                supervisor.wait(30)
            except subprocess.TimeoutExpired:
                supervisor.kill()


def check(supervisor, library, errors):
    lines = []
    threading.Thread(target=lambda: lines.extend(iter(
        supervisor.stdout.readline, "")), daemon=True).start()
    banner = wait_until(lambda: next(
        (l for l in lines if "listening on" in l), None), 30)
    port = int(re.search(r":(\d+),", banner).group(1))
    print(re.sub(r"127\.0\.0\.1:\d+", "ADDRESS", banner.strip()))
    if not wait_until(lambda: any("(start 1)" in l for l in lines), 60):
        sys.exit("FAIL: the ranks did not start")
    status, body = post(port, "/v1/completions", PROMPT)
    before = json.loads(body)["choices"][0]["text"]
    print("before:", status)

    # A long stream, and rank 1 killed once its first event has come.
    ended = {}

    def stream():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/completions", json.dumps(
            dict(PROMPT, max_tokens=400, stream=True)),
            {"Content-Type": "application/json"})
        response = connection.getresponse()
        ended["first"] = response.readline()
        started["event"].set()
        try:
            while response.readline():
                pass
        except (OSError, http.client.HTTPException):
            pass
        ended["at"] = time.time()

    started = {"event": threading.Event()}
    reader = threading.Thread(target=stream, daemon=True)
    reader.start()
    started["event"].wait(30)
    victims = processes_of(library, 1)
    killed_at = time.time()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    print("killed rank 1:", len(victims) == 1)
    reader.join(30)
    print("stream in flight ended within 10 s:",
          "at" in ended and ended["at"] - killed_at < 10)

    def unavailable():
        status, _, body = get(port, "/health")
        return (status, body) if status == 503 else None
    down = wait_until(unavailable, 20)
    if not down:
        sys.exit("FAIL: no 503 while the ranks were down")
    print("while down:", down[0], json.loads(down[1])["error"]["message"])

    if not wait_until(lambda: any("(start 2)" in l for l in lines), 60):
        sys.exit("FAIL: the ranks were not started again")
    status, body = post(port, "/v1/completions", PROMPT)
    after = json.loads(body)["choices"][0]["text"]
    print("after relaunch:", status, "same completion:", after == before)

    supervisor.send_signal(signal.SIGTERM)
    print("supervisor exit status:", supervisor.wait(30))
    print("ranks left:", len(processes_of(library, 0) +
                             processes_of(library, 1)))
    errors.seek(0)
    for line in errors:
        if "exited on signal" in line or "ranks ended" in line:
            print(line.strip())


if __name__ == "__main__":
    main()
