#!/usr/bin/env python3
"""bench/serve_soak.py: tfm-serve under well-formed streaming clients, first
alone, then mixed with every hostile pattern of issue 71, each phase on a
fresh server. Reports the well-formed requests' p50/p99 latency in both
phases and their ratio, requests lost (anything but a whole stream or a 503
with Retry-After), and the server's peak resident memory against its
configured limits. Loopback only. Target: p99 within 2x, no request lost,
peak RSS bounded by the limits (not growing with the attack's volume).

    bash scripts/build.sh
    build/bin/tfmc ../shared/models/stories260K-hf --emit=lib -o /tmp/libsoak.so
    python3 bench/serve_soak.py build/bin/tfm-serve /tmp/libsoak.so [--minutes 10]

Hostile patterns, from a process of their own (so that the clients
measured share no interpreter with them), each a thread repeating its
attack every --hostile-interval seconds for the whole hostile phase: slow
clients (100 connections dripping a header line every 3 s, and 100 silent
ones), JSON nested 150,000 deep, NUL characters, a chunked body past the
limit, a Content-Length past the limit with no body, 50,000 headers, a
Range of 1000 parts, 7 pipelined requests, and wrong field kinds.
"""
import argparse
import http.client
import json
import multiprocessing
import re
import socket
import subprocess
import threading
import time

MAX_REQUEST_BYTES = 400000
MAX_CONNECTIONS = 1024


def start_server(serve, library):
    server = subprocess.Popen(
        [serve, library, "--port", "0", "--max-sequences", "8",
         "--max-waiting", "64", "--max-request-bytes", str(MAX_REQUEST_BYTES),
         "--max-connections", str(MAX_CONNECTIONS), "--timeout", "30"],
        stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline()
    server.stdout.readline()
    return server, int(re.search(r":(\d+)$", banner.strip()).group(1))


def memory_kb(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Outcomes:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies, self.refused, self.lost = [], 0, []

    def add(self, latency=None, refused=False, lost=None):
        with self.lock:
            if latency is not None:
                self.latencies.append(latency)
            self.refused += refused
            if lost:
                self.lost.append(lost)


def well_formed_client(port, stop, outcomes, index):
    """Streams completions back to back; a 503 must carry Retry-After."""
    n = 0
    while not stop.is_set():
        n += 1
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 32,
                           "temperature": 0.8, "seed": index * 100000 + n,
                           "stream": True, "ignore_eos": True})
        started = time.monotonic()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port,
                                                    timeout=60)
            connection.request("POST", "/v1/completions", body,
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            if response.status == 503:
                response.read()
                retry = response.getheader("Retry-After")
                outcomes.add(refused=True,
                             lost=None if retry else "503 without Retry-After")
                time.sleep(float(retry or 1))
                continue
            if response.status != 200:
                outcomes.add(lost=f"status {response.status}")
                continue
            text = response.read().decode()
            connection.close()
            if not text.rstrip().endswith("data: [DONE]"):
                outcomes.add(lost="stream without [DONE]")
                continue
            outcomes.add(latency=time.monotonic() - started)
        except (OSError, http.client.HTTPException) as error:
            outcomes.add(lost=f"{type(error).__name__}: {error}")


def send_raw(port, data, read=True, timeout=10):
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        try:
            sock.sendall(data)
            while read and sock.recv(65536):
                pass
        finally:
            sock.close()
    except OSError:
        pass


def post_raw(port, body, headers=b"Content-Type: application/json\r\n"):
    if isinstance(body, str):
        body = body.encode()
    send_raw(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + headers +
             b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) +
             body)


def hostile_patterns(port):
    deep = "[" * 150000 + "]" * 150000
    chunk = b"x" * 65536
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk)
                       for _ in range(32)) + b"0\r\n\r\n"
    headers = b"".join(b"X-%d: y\r\n" % i for i in range(50000))
    return {
        "nested JSON": lambda: post_raw(port, '{"prompt": %s}' % deep),
        "NUL characters": lambda: post_raw(
            port, '{"prompt": "Once\\u0000 upon", "max_tokens": 2}'),
        "wrong kinds": lambda: post_raw(
            port, '{"prompt": "Once", "top_k": 0.5, "user": 5}'),
        "chunked past the limit": lambda: send_raw(
            port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
            b"Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n" +
            chunked),
        "announced past the limit": lambda: send_raw(
            port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 100000000\r\n\r\n"),
        "50,000 headers": lambda: send_raw(
            port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n"),
        "Range of 1000 parts": lambda: send_raw(
            port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Range: bytes=" + b",".join([b"0-"] * 1000) + b"\r\n\r\n"),
        "pipelined": lambda: send_raw(
            port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 6 +
            b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    }


def slow_clients(port, stop, count=100, interval=3.0):
    """Connections that send a header line every `interval` seconds, and as
    many that send nothing; reopened when the server closes them."""
    sockets = []
    while not stop.is_set():
        while len(sockets) < 2 * count:
            try:
                sock = socket.create_connection(("127.0.0.1", port),
                                                timeout=5)
                if len(sockets) % 2 == 0:
                    sock.sendall(b"POST /v1/completions HTTP/1.1\r\n")
                sockets.append(sock)
            except OSError:
                break
        stop.wait(interval)
        for i, sock in enumerate(list(sockets)):
            if i % 2:
                continue
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except OSError:
                sockets.remove(sock)
                sock.close()
    for sock in sockets:
        sock.close()


def attack(port, seconds, interval, counts):
    """Every hostile pattern at once for `seconds` (a process of its own);
    `counts` (shared) gets how many of each were sent."""
    stop = threading.Event()

    def loop(name, pattern):
        while not stop.is_set():
            started = time.monotonic()
            pattern()
            counts[name] = counts.get(name, 0) + 1
            stop.wait(max(0.0, interval - (time.monotonic() - started)))

    threads = [threading.Thread(target=slow_clients, args=(port, stop))]
    threads += [threading.Thread(target=loop, args=item)
                for item in hostile_patterns(port).items()]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()


def run_phase(serve, library, seconds, clients, hostile_interval):
    server, port = start_server(serve, library)
    stop = threading.Event()
    outcomes = Outcomes()
    threads = [threading.Thread(target=well_formed_client,
                                args=(port, stop, outcomes, i))
               for i in range(clients)]
    manager = multiprocessing.Manager()
    counts = manager.dict()
    attacker = None
    if hostile_interval:
        attacker = multiprocessing.Process(
            target=attack, args=(port, seconds, hostile_interval, counts))
        attacker.start()
    peak = 0
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(1)
        peak = max(peak, memory_kb(server.pid, "VmRSS"))
    stop.set()
    for thread in threads:
        thread.join()
    if attacker:
        attacker.join()
    peak = max(peak, memory_kb(server.pid, "VmHWM"))
    server.terminate()
    server.wait()
    return outcomes, peak, dict(counts)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("serve")
    parser.add_argument("library")
    parser.add_argument("--minutes", type=float, default=10,
                        help="both phases together (10)")
    parser.add_argument("--clients", type=int, default=4,
                        help="well-formed streaming clients (4)")
    parser.add_argument("--hostile-interval", type=float, default=0.1,
                        help="seconds between one pattern's attacks (0.1)")
    args = parser.parse_args()
    seconds = args.minutes * 60 / 2
    results = {}
    for name, interval in [("alone", 0), ("with hostile",
                                          args.hostile_interval)]:
        outcomes, peak, counts = run_phase(args.serve, args.library, seconds,
                                           args.clients, interval)
        results[name] = (outcomes, peak)
        lat = outcomes.latencies
        print(f"{name}: {len(lat)} streams, p50 "
              f"{percentile(lat, 50) * 1000:.0f} ms, p99 "
              f"{percentile(lat, 99) * 1000:.0f} ms, 503s {outcomes.refused}, "
              f"lost {len(outcomes.lost)}, peak RSS {peak / 1024:.0f} MiB")
        for reason in sorted(set(outcomes.lost)):
            print(f"  lost: {outcomes.lost.count(reason)} x {reason}")
        if counts:
            print("  hostile requests sent: " +
                  ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    alone, hostile = results["alone"], results["with hostile"]
    ratio = (percentile(hostile[0].latencies, 99) /
             percentile(alone[0].latencies, 99))
    lost = len(alone[0].lost) + len(hostile[0].lost)
    print(f"p99 with hostile / alone: {ratio:.2f}x (target <= 2x); "
          f"lost {lost} (target 0); peak RSS {alone[1] / 1024:.0f} -> "
          f"{hostile[1] / 1024:.0f} MiB (limits: {MAX_CONNECTIONS} "
          f"connections, bodies of {MAX_REQUEST_BYTES} bytes)")


if __name__ == "__main__":
    main()
