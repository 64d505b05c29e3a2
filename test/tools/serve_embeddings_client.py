"""Drives tfm-serve's /v1/embeddings with Python's HTTP client and prints one
line per check for FileCheck (tfm-serve-embeddings.test).

  serve_embeddings_client.py TFM_SERVE LIBRARY GOLDEN_EMBEDDING

The library is CLIP's text tower (@embed_text); GOLDEN_EMBEDDING is
transformers' text_embeds of "a photo of a cat" (f32).
"""

import base64
import http.client
import json
import re
import struct
import subprocess
import sys


def post(port, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("POST", "/v1/embeddings",
                       body if isinstance(body, str) else json.dumps(body),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    payload = json.loads(response.read().decode())
    connection.close()
    return response.status, payload


def main():
    serve, library, golden_path = sys.argv[1:4]
    golden = open(golden_path, "rb").read()
    golden = struct.unpack(f"<{len(golden) // 4}f", golden)
    server = subprocess.Popen([serve, library, "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    print(banner.rsplit(" on ", 1)[0])
    print(server.stdout.readline().strip())
    port = int(re.search(r":(\d+)$", banner).group(1))
    try:
        status, body = post(port, {"model": "model",
                                   "input": "a photo of a cat"})
        vector = body["data"][0]["embedding"]
        error = max(abs(a - b) for a, b in zip(vector, golden))
        print("one string:", status, body["object"], len(body["data"]),
              body["data"][0]["object"], len(vector), "dims, usage",
              body["usage"], "within 1e-4 of transformers:", error < 1e-4)
        status, body = post(port, {"input": ["a photo of a cat",
                                             "a photo of a dog"]})
        print("two strings:", status, [d["index"] for d in body["data"]],
              "usage", body["usage"]["prompt_tokens"])
        status, ids_body = post(port, {"input": [566, 320, 520, 512, 320,
                                                 559, 567]})
        print("token ids equal the string's:", status,
              ids_body["data"][0]["embedding"] == vector)
        status, body = post(port, {"input": [[566, 320, 567],
                                             [566, 343, 567]]})
        print("lists of token ids:", status, len(body["data"]))
        status, body = post(port, {"input": "a photo of a cat",
                                   "encoding_format": "base64",
                                   "dimensions": 24})
        raw = base64.b64decode(body["data"][0]["embedding"])
        decoded = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        print("base64 decodes to the floats:", status, decoded == vector)
        # 200 inputs run in parts of one call's (other requests between
        # them): the answers stay in order.
        status, body = post(port, {"input": ["x"] * 199 + ["a photo of a cat"]})
        print("200 inputs:", status, [d["index"] for d in body["data"]] ==
              list(range(200)), "last is the cat's:",
              max(abs(a - b) for a, b in zip(body["data"][199]["embedding"],
                                             vector)) < 1e-4)
        for label, request in [
                ("dimensions", {"input": "a cat", "dimensions": 8}),
                ("empty", {"input": []}),
                ("empty string", {"input": ""}),
                ("unknown field", {"input": "a cat", "inputs": "a cat"}),
                ("another model", {"input": "a cat", "model": "gpt-4"}),
                ("too long", {"input": "a cat " * 40}),
                ("id out of range", {"input": [566, 9999, 567]}),
                ("format", {"input": "a cat", "encoding_format": "int8"}),
                ("not JSON", "{input"),
                ("NUL", {"input": "hello\u0000world"}),
                ("2049 inputs", {"input": ["a"] * 2049}),
                ("no input", {"model": "model"})]:
            status, body = post(port, request)
            print(f"refused, {label}:", status, body["error"]["message"])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/completions", json.dumps({"prompt": "a"}))
        print("completions on an embedder:", connection.getresponse().status)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
