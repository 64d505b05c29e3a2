"""Drives tfm-serve's speculative decoding over loopback and prints one
line per check for FileCheck (tfm-serve-speculative.test).

  serve_speculative_client.py TFM_SERVE SPECULATIVE_LIBRARY EXECUTABLE \
      DRAFT_LIBRARY

The server runs with --lookup-ngram 2: every request drafts by prompt
lookup unless it says otherwise (lookup_ngram: 0), and each one's text
equals the executable's without drafts, whole, streamed or eight at once
(sampled, its seed); the usage counts the drafts OpenAI's way
(completion_tokens_details' accepted and rejected prediction tokens).
Then with --draft DRAFT_LIBRARY (the model at int4): every request drafts
with the draft model, and the texts are the executable's again.
"""
import json
import subprocess
import sys
import threading

from serve_client import post, start_server, stream_text

PROMPT = "Tom had a ball. Tom liked the ball. Tom"


def complete(port, **fields):
    status, payload = post(port, "/v1/completions",
                           dict({"prompt": PROMPT}, **fields))
    return status, json.loads(payload)


def alone(executable, *options):
    return subprocess.run([executable, "--prompt", PROMPT, *options],
                          capture_output=True, text=True,
                          check=True).stdout.rstrip("\n")[len(PROMPT):]


def sampled_together(port, executable, count, extra):
    """`count` sampled requests at once (request i: seed i + 1, and the
    fields extra(i)); how many texts equal the executable's alone."""
    results = [None] * count

    def sample(i):
        results[i] = complete(port, max_tokens=60, temperature=0.9, top_k=40,
                              seed=i + 1, **extra(i))[1]
    threads = [threading.Thread(target=sample, args=(i,))
               for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(r["choices"][0]["text"] ==
               alone(executable, "-n", "60", "--temperature", "0.9",
                     "--top-k", "40", "--seed", str(i + 1))
               for i, r in enumerate(results))


def main():
    serve, library, executable, draft = sys.argv[1:5]
    server, port = start_server(serve, library, "--lookup-ngram", "2")
    try:
        _, body = complete(port, max_tokens=80, temperature=0)
        details = body["usage"]["completion_tokens_details"]
        accepted = details["accepted_prediction_tokens"]
        print("greedy equals the executable:",
              body["choices"][0]["text"] == alone(executable, "-n", "80"),
              "accepted", accepted > 0, "rejected",
              details["rejected_prediction_tokens"] >= 0)
        _, off = complete(port, max_tokens=80, temperature=0, lookup_ngram=0)
        print("lookup_ngram 0:", off["choices"][0]["text"] ==
              body["choices"][0]["text"], "details",
              "completion_tokens_details" in off["usage"])

        print("sampled together:",
              sampled_together(port, executable, 8,
                               lambda i: {"lookup_ngram": 1 + i % 3}),
              "of 8 equal the executable's")
        text, finish, usage, _ = stream_text(port, {
            "prompt": PROMPT, "max_tokens": 80, "temperature": 0,
            "stream": True})
        print("streamed equals whole:", text == body["choices"][0]["text"],
              "usage details:",
              usage["completion_tokens_details"] == details)
        for fields in [{"lookup_ngram": 65}, {"lookup_ngram": 1.5},
                       {"lookup_ngram": "2"}]:
            status, error = complete(port, max_tokens=4, **fields)
            print("refused:", status, error["error"]["param"],
                  error["error"]["message"])
    finally:
        server.terminate()
        server.wait()

    # A draft model: greedy and sampled texts as without drafts, whole and
    # streamed, the usage counting what it drafted.
    server, port = start_server(serve, library, "--draft", draft,
                                "--draft-max", "4")
    try:
        _, drafted = complete(port, max_tokens=80, temperature=0)
        details = drafted["usage"]["completion_tokens_details"]
        print("draft model: greedy equals the executable:",
              drafted["choices"][0]["text"] == alone(executable, "-n", "80"),
              "accepted", details["accepted_prediction_tokens"] > 0)
        print("draft model: sampled together:",
              sampled_together(port, executable, 4, lambda i: {}),
              "of 4 equal the executable's")
        text, _, usage, _ = stream_text(port, {
            "prompt": PROMPT, "max_tokens": 80, "temperature": 0,
            "stream": True})
        print("draft model: streamed equals whole:",
              text == drafted["choices"][0]["text"], "usage details:",
              usage["completion_tokens_details"] == details)
    finally:
        server.terminate()
        server.wait()

    # A server without drafts refuses a request's lookup_ngram by name.
    server, port = start_server(serve, library)
    try:
        status, error = complete(port, max_tokens=4, lookup_ngram=2)
        print("no drafts:", status, error["error"]["message"])
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
