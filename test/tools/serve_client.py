"""Drives tfm-serve over loopback with Python's HTTP client and prints one
line per check for FileCheck (tfm-serve.test).

  serve_client.py TFM_SERVE LIBRARY EXECUTABLE

Starts `TFM_SERVE LIBRARY --port 0` with small limits (TFM_SERVE may be a
command line: `mpirun -np 2 tfm-serve` for a model split over ranks), reads the port it
prints, and checks: greedy completions equal the compiled executable's
text; streams equal the same requests unstreamed, eight at once (more than
the server decodes together); prompts as ids; malformed requests; a client
that disconnects mid-stream (its request is cancelled and its KV blocks
freed); overload (503); /health and /metrics.
"""

import http.client
import json
import re
import shlex
import subprocess
import sys
import threading
import time

from serve_process import post

PROMPTS = ["Once upon a time", "The cat", "Lily and Ben went to the park",
           "One day, a little bird"]


def get(port, path):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path)
    response = connection.getresponse()
    payload = response.read().decode()
    connection.close()
    return response.status, response.getheader("Content-Type"), payload


def open_stream(port, body, path="/v1/completions"):
    """The connection and response of a streamed completion."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("POST", path,
                       json.dumps(dict(body, stream=True)),
                       {"Content-Type": "application/json"})
    return connection, connection.getresponse()


def next_event(response):
    """The next server-sent event's data (None at the end of the body)."""
    while True:
        line = response.readline()
        if not line:
            return None
        line = line.decode().strip()
        if line.startswith("data: "):
            return line[len("data: "):]


def stream_text(port, body):
    connection, response = open_stream(port, body)
    text, finish, usage = "", None, None
    while True:
        data = next_event(response)
        if data is None or data == "[DONE]":
            break
        chunk = json.loads(data)
        choice = chunk["choices"][0]
        text += choice["text"]
        finish = choice["finish_reason"] or finish
        usage = chunk.get("usage", usage)
    connection.close()
    return text, finish, usage, data == "[DONE]"


def metrics(port):
    _, _, text = get(port, "/metrics")
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def wait_for(port, condition, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        values = metrics(port)
        if condition(values):
            return values
        time.sleep(0.02)
    return metrics(port)


def start_server(serve, library, *options):
    """The server process and its port; prints its banner (less the
    address) and the chat template line."""
    server = subprocess.Popen([*shlex.split(serve), library, "--port", "0",
                               *options],
                              stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    print(banner.rsplit(" on ", 1)[0])
    print(server.stdout.readline().strip())
    return server, int(re.search(r":(\d+)$", banner).group(1))


def main():
    serve, library, executable = sys.argv[1:4]
    server, port = start_server(serve, library, "--max-sequences", "4",
                                "--max-waiting", "2", "--max-tokens", "400",
                                "--max-request-bytes", "4096")
    try:
        run_checks(port, executable)
    finally:
        server.terminate()
        server.wait(timeout=30)


def run_checks(port, executable):
    status, kind, body = get(port, "/health")
    print("health:", status, kind, body)

    # Greedy completions against the executable's generation.
    expected = {}
    for prompt in PROMPTS:
        status, body = post(port, "/v1/completions",
                            {"model": "model", "prompt": prompt,
                             "max_tokens": 24, "temperature": 0})
        response = json.loads(body)
        text = response["choices"][0]["text"]
        expected[prompt] = text
        alone = subprocess.run(
            [executable, "--prompt", prompt, "-n", "24"], check=True,
            capture_output=True, text=True).stdout
        same = alone.rstrip("\n") == prompt + text
        print("completion:", status, response["object"],
              response["choices"][0]["finish_reason"],
              "usage", response["usage"]["prompt_tokens"] > 0,
              response["usage"]["completion_tokens"],
              "equals the executable" if same else
              "DIFFERS: %r vs %r" % (prompt + text, alone))

    # Eight streams at once (the server decodes 4, queues 2: 503s retried).
    results = [None] * 8

    def client(index):
        prompt = PROMPTS[index % len(PROMPTS)]
        while True:
            connection, response = open_stream(
                port, {"prompt": prompt, "max_tokens": 24, "temperature": 0})
            if response.status != 503:
                break
            connection.close()
            time.sleep(0.01)
        text = ""
        while True:
            data = next_event(response)
            if data is None or data == "[DONE]":
                break
            text += json.loads(data)["choices"][0]["text"]
        connection.close()
        results[index] = text == expected[prompt] and data == "[DONE]"

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("concurrent streams equal unstreamed:", sum(results), "of 8")

    text, finish, usage, done = stream_text(
        port, {"prompt": PROMPTS[0], "max_tokens": 24, "temperature": 0,
               "stop": [expected[PROMPTS[0]][8:12]]})
    print("stop string: text is a prefix:",
          expected[PROMPTS[0]].startswith(text), "shorter:",
          len(text) < len(expected[PROMPTS[0]]), "finish", finish,
          "[DONE]" if done else "no [DONE]")

    status, body = post(port, "/v1/completions",
                        {"prompt": [1, 403, 407], "max_tokens": 3,
                         "temperature": 0.7, "seed": 11})
    again = post(port, "/v1/completions",
                 {"prompt": [1, 403, 407], "max_tokens": 3,
                  "temperature": 0.7, "seed": 11})[1]
    print("ids prompt:", status, json.loads(body)["usage"],
          "same seed, same text:",
          json.loads(body)["choices"][0]["text"] ==
          json.loads(again)["choices"][0]["text"])

    # Malformed requests: status and message.
    bad = [
        '{"prompt": "x", ',
        {"prompt": "x", "max_tokenz": 3},
        {"prompt": "x", "model": "gpt-4"},
        {"prompt": "x", "max_tokens": 401},
        {"prompt": "x " * 300, "max_tokens": 300},
        {"prompt": [1, 99999]},
        {"prompt": "x", "temperature": "hot"},
        {"prompt": "x", "stream": "yes"},
        {"max_tokens": 3},
        "[" + "1," * 3000 + "1]",
    ]
    for body in bad:
        status, payload = post(port, "/v1/completions", body)
        print("refused:", status, json.loads(payload)["error"]["message"][:120])
    status, _, payload = get(port, "/v1/nothing")
    print("refused:", status, json.loads(payload)["error"]["message"])

    # A client that goes away mid-stream: cancelled, its blocks freed. On a
    # loaded machine (CI) the tiny model can finish its 400 tokens before
    # the server sees the closed connection: then the attempt is repeated,
    # and only a server that never cancels fails.
    for attempt in range(5):
        before = metrics(port)
        connection, response = open_stream(
            port, {"prompt": [1], "max_tokens": 400, "ignore_eos": True,
                   "temperature": 0})
        first = next_event(response)
        connection.close()
        after = wait_for(port, lambda m: m['tfm_requests_running'] == 0)
        cancelled = (after['tfm_requests_total{outcome="cancelled"}'] -
                     before['tfm_requests_total{outcome="cancelled"}'])
        if cancelled:
            break
    print("disconnect: first event", first is not None, "cancelled",
          int(cancelled),
          "tokens generated < 400:",
          after["tfm_generation_tokens_total"] -
          before["tfm_generation_tokens_total"] < 400,
          "running", int(after["tfm_requests_running"]),
          "blocks used", int(after['tfm_kv_blocks{state="used"}']))

    # Overload: 4 decoding and 2 queued hold the server; the next gets 503.
    # The tiny model can finish a holder's 400 tokens before the next
    # request arrives on a loaded machine (CI): then the attempt is
    # repeated, and only a server that never refuses fails.
    for attempt in range(10):
        holders = []
        for _ in range(6):
            connection, response = open_stream(
                port, {"prompt": [1], "max_tokens": 400, "ignore_eos": True,
                       "temperature": 0})
            holders.append((connection, response))
        refused = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        refused.request("POST", "/v1/completions",
                        json.dumps({"prompt": "x", "max_tokens": 2}),
                        {"Content-Type": "application/json"})
        response = refused.getresponse()
        status, payload = response.status, response.read().decode()
        retry_after = response.getheader("Retry-After")
        refused.close()
        for connection, _ in holders:
            connection.close()
        after = wait_for(port, lambda m: m['tfm_requests_running'] == 0 and
                         m['tfm_requests_waiting'] == 0)
        if status == 503:
            break
    print("overload:", status, json.loads(payload)["error"]["message"]
          if status == 503 else payload, "| Retry-After:", retry_after)
    print("after overload: running", int(after["tfm_requests_running"]),
          "waiting", int(after["tfm_requests_waiting"]), "blocks used",
          int(after['tfm_kv_blocks{state="used"}']), "rejected >= 1:",
          after['tfm_requests_total{outcome="rejected"}'] >= 1)

    # A chat needs a chat template, which this model lacks.
    status, payload = post(port, "/v1/chat/completions",
                           {"messages": [{"role": "user", "content": "Hi"}]})
    print("chat without template:", status,
          json.loads(payload)["error"]["message"])

    status, kind, text = get(port, "/metrics")
    print("metrics:", status, kind,
          "histogram" if "tfm_time_per_output_token_seconds_bucket" in text
          else "no histogram")
    # More calls than steps: steps ran as micro-batches (a model in
    # pipeline stages) or checked drafts.
    values = metrics(port)
    calls, steps = values["tfm_model_calls_total"], values["tfm_engine_steps_total"]
    print("model calls:", int(calls), "in", int(steps), "steps, more calls "
          "than steps:", calls > steps)


if __name__ == "__main__":
    main()
