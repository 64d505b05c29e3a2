"""Drives tfm-serve's reasoning_content over loopback and prints one line
per check for FileCheck (tfm-serve-reasoning.test).

  serve_reasoning_client.py TFM_SERVE LIBRARY CLOSED_TEMPLATE

LIBRARY is a random-weight model whose vocabulary has <think> and
</think> and whose chat template opens <think> after the prompt, as
DeepSeek-R1's does: the whole output is then reasoning. The same sampled
request (a seed) with reasoning_format "none" gives the output as it is;
"auto" must give it as reasoning_content (its leading white space
dropped) with an empty content, whole and streamed. CLOSED_TEMPLATE
closes the block (Qwen3's enable_thinking false): the output is then all
content.
"""

import json
import sys

from serve_client import next_event, open_stream, post
import re
import shlex
import subprocess

MESSAGES = [{"role": "user", "content": "Why is the sky blue?"}]


def start(serve, library, *options):
    """The server and its port; prints its three start-up lines (the
    address left out)."""
    server = subprocess.Popen([*shlex.split(serve), library, "--port", "0",
                               *options], stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    print(banner.rsplit(" on ", 1)[0])
    print(server.stdout.readline().strip())
    print(server.stdout.readline().strip())
    return server, int(re.search(r":(\d+)$", banner).group(1))


def chat(port, **fields):
    body = dict({"messages": MESSAGES, "max_tokens": 24, "seed": 11,
                 "temperature": 1.5, "ignore_eos": True}, **fields)
    status, payload = post(port, "/v1/chat/completions", body)
    return status, json.loads(payload)


def stream(port, **fields):
    body = dict({"messages": MESSAGES, "max_tokens": 24, "seed": 11,
                 "temperature": 1.5, "ignore_eos": True}, **fields)
    connection, response = open_stream(port, body, "/v1/chat/completions")
    content, reasoning = "", ""
    while True:
        data = next_event(response)
        if data is None or data == "[DONE]":
            break
        delta = json.loads(data)["choices"][0]["delta"]
        content += delta.get("content", "")
        reasoning += delta.get("reasoning_content", "")
    connection.close()
    return content, reasoning


def checks(port, inside):
    _, raw = chat(port, reasoning_format="none")
    raw = raw["choices"][0]["message"]
    _, split = chat(port)
    split = split["choices"][0]["message"]
    expected = raw["content"].lstrip(" \t\r\n")
    if inside:
        print("opened: raw has no reasoning_content:",
              "reasoning_content" not in raw,
              "| auto: content empty:", split["content"] == "",
              "reasoning is the raw output:",
              split.get("reasoning_content") == expected,
              "| length", len(expected) > 0)
        content, reasoning = stream(port)
        print("opened, streamed: content empty:", content == "",
              "reasoning equals unstreamed:",
              reasoning == split.get("reasoning_content"))
    else:
        print("closed: no reasoning_content:", "reasoning_content" not in split,
              "content is the raw output:", split["content"] == expected)
        content, reasoning = stream(port)
        print("closed, streamed: reasoning empty:", reasoning == "",
              "content equals unstreamed:", content == split["content"])


def main():
    serve, library, closed = sys.argv[1:4]
    server, port = start(serve, library)
    try:
        checks(port, inside=True)
        for value in ["deepseek-legacy", 1]:
            status, body = chat(port, reasoning_format=value)
            print("refused:", status, body["error"]["message"])
        status, body = post(port, "/v1/completions",
                            {"prompt": "Hi", "reasoning_format": "none"})
        print("refused:", status, json.loads(body)["error"]["message"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    server, port = start(serve, library, "--chat-template", closed)
    try:
        checks(port, inside=False)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
