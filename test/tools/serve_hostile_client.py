"""Drives tfm-serve as a hostile client would, over loopback only, and prints
one line per check for FileCheck (tfm-serve-hostile.test).

  serve_hostile_client.py TFM_SERVE LIBRARY [--queued-stream]

Each attack of issue 71 is sent once, bounded in count and time, and is
followed by a check that the server still answers: bodies nested 150,000
levels deep, NUL characters in text, fields of the wrong kind, slow clients
holding connections, a chunked body past the limit, a Content-Length past
the limit with no body, 250,000 headers, a multiplied Range header, and
pipelined requests. The server's memory is read from /proc.
With --queued-stream: a stream that waits longer than the idle timeout
for its first token (queued behind another request) is kept open.
"""

import http.client
import json
import socket
import sys
import threading
import time

from serve_process import post, start

def message(payload):
    try:
        return json.loads(payload)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return payload[:120]


def health(port, timeout=5):
    """/health's status and how long it took."""
    start_time = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port,
                                            timeout=timeout)
    connection.request("GET", "/health")
    status = connection.getresponse().status
    connection.close()
    return status, time.monotonic() - start_time


def resident_kb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def raw_exchange(port, data, timeout=10, until=None):
    """Sends bytes on one connection; returns what comes back until the
    server closes it (or `until` bytes are in, or the timeout)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    received = b""
    try:
        while until is None or received.count(until[0]) < until[1]:
            piece = sock.recv(65536)
            if not piece:
                break
            received += piece
    except (socket.timeout, ConnectionResetError):
        pass
    sock.close()
    return received


def status_of(response):
    line = response.split(b"\r\n", 1)[0].decode(errors="replace")
    return line.split(" ")[1] if " " in line else "(none)"


def queued_stream(serve, library):
    """A stream queued behind a long request on a server whose connections
    may idle 1 s: SSE comments keep it open until its tokens come."""
    server, port = start(serve, library, "--max-sequences", "1",
                         "--timeout", "1")
    try:
        def hold():
            post(port, "/v1/completions", {"prompt": [1], "max_tokens": 510,
                                           "ignore_eos": True})

        holder = threading.Thread(target=hold)
        holder.start()
        time.sleep(0.05)
        connection = http.client.HTTPConnection("127.0.0.1", port,
                                                timeout=60)
        connection.request("POST", "/v1/completions",
                           json.dumps({"prompt": [1], "max_tokens": 5,
                                       "stream": True}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        events = response.read().decode().split("\n\n")
        data = [e for e in events if e.startswith("data: ")]
        others = [e for e in events if e and not e.startswith(("data: ", ":"))]
        print("queued stream:", response.status, "ends with [DONE]:",
              data[-1] == "data: [DONE]", "| events other than data and "
              "comments:", len(others))
        holder.join()
    finally:
        server.terminate()
        server.wait()


def main():
    serve, library = sys.argv[1:3]
    if sys.argv[3:] == ["--queued-stream"]:
        return queued_stream(serve, library)
    # Bodies up to 400,000 bytes: the nested ones (300 KB) are read.
    server, port = start(serve, library, "--max-sequences", "2",
                         "--max-request-bytes", "400000", "--timeout", "60")
    try:
        run(server, port)
    finally:
        server.terminate()
        server.wait()


def run(server, port):
    # Nesting: 150,000 arrays (300 KB) in each field that took the server
    # down.
    deep = "[" * 150000 + "]" * 150000
    for field, body in [
            ("prompt", '{"prompt": %s}' % deep),
            ("max_completion_tokens",
             '{"messages": [{"role": "user", "content": "hi"}], '
             '"max_completion_tokens": %s}' % deep),
            ("messages[0].content",
             '{"messages": [{"role": "user", "content": %s}]}' % deep),
            ("a message's extra key",
             '{"messages": [{"role": "user", "content": "hi", "x": %s}]}'
             % deep)]:
        path = ("/v1/completions" if field == "prompt"
                else "/v1/chat/completions")
        status, payload = post(port, path, body)
        print("nested", field + ":", status, message(payload))
    print("alive after nesting:", health(port)[0])

    # Text with NUL characters is refused by name, not cut short.
    for body in [{"prompt": "Once\u0000 upon", "max_tokens": 2},
                 {"prompt": "Once", "stop": ["a\u0000b"], "max_tokens": 2}]:
        status, payload = post(port, "/v1/completions", body)
        print("nul:", status, message(payload))

    # Fields of the wrong kind.
    for body in [{"prompt": "Once", "top_k": 0.5},
                 {"prompt": "Once", "user": 5},
                 {"prompt": "Once", "user": {"id": 1}}]:
        status, payload = post(port, "/v1/completions", body)
        print("field:", status, message(payload))

    # A body past 8 KiB sent as curl -d sends it (a form's content type) is
    # read as the JSON it is.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/v1/completions",
                       '{"prompt": "Once", "max_tokens": 2}' + " " * 20000,
                       {"Content-Type": "application/x-www-form-urlencoded"})
    print("form content type, 20 KB:", connection.getresponse().status)
    connection.close()

    # Slow clients: 120 connections each sending a header line a second
    # hold no worker; /health and a completion are answered meanwhile.
    stop = threading.Event()
    slow = []
    for _ in range(120):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        slow.append(sock)

    def drip():
        while not stop.wait(1.0):
            for sock in slow:
                try:
                    sock.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass

    dripper = threading.Thread(target=drip)
    dripper.start()
    time.sleep(1.5)
    status, seconds = health(port)
    print("slow clients: health", status, "within 2 s:", seconds < 2.0)
    status, payload = post(port, "/v1/completions",
                           {"prompt": "Once", "max_tokens": 4,
                            "temperature": 0}, timeout=20)
    print("slow clients: completion", status)
    stop.set()
    dripper.join()
    for sock in slow:
        sock.close()

    # A chunked body past the limit: refused, and not kept.
    before = resident_kb(server.pid)
    chunk = b"x" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk)
                    for _ in range(64)) + b"0\r\n\r\n"
    response = raw_exchange(
        port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
        b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        + body)
    grown = resident_kb(server.pid) - before
    print("chunked 4 MiB:", status_of(response) if response else
          "closed without an answer", "| resident grew under 16 MiB:",
          grown < 16384)

    # An announced length past the limit, no body sent: 413 at once, not
    # after --timeout.
    start_time = time.monotonic()
    response = raw_exchange(
        port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
        b"Content-Length: 100000000\r\n\r\n", timeout=30)
    print("announced 100 MB:", status_of(response), "within 5 s:",
          time.monotonic() - start_time < 5)

    # 250,000 headers: refused; the memory they took goes with the
    # connection.
    before = resident_kb(server.pid)
    headers = b"".join(b"X-%d: y\r\n" % i for i in range(250000))
    response = raw_exchange(
        port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    time.sleep(0.5)
    grown = resident_kb(server.pid) - before
    print("250,000 headers:", status_of(response) if response else
          "closed without an answer", "| resident grew under 16 MiB:",
          grown < 16384, "| alive:", health(port)[0])

    # A Range of 1000 parts: the whole body, once.
    ranges = b",".join([b"0-"] * 1000)
    response = raw_exchange(
        port, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Range: bytes=" + ranges + b"\r\n\r\n")
    print("range:", status_of(response), "body:",
          response.split(b"\r\n\r\n", 1)[-1].decode())

    # Seven requests pipelined on one connection: seven answers.
    requests = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 6 + (
        b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    response = raw_exchange(port, requests)
    print("pipelined: answers", response.count(b"HTTP/1.1 200"))

    print("server alive at the end:", health(port)[0],
          "| peak resident under 512 MiB:",
          resident_kb(server.pid, "VmHWM") < 512 * 1024)


if __name__ == "__main__":
    main()
