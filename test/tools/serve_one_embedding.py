"""Starts tfm-serve on an embedder and posts one string to /v1/embeddings:
prints the status, the usage and whether the vector is within 1e-4 of a
golden (f32) (tfm-serve-embeddings.test's SigLIP case).

  serve_one_embedding.py TFM_SERVE LIBRARY TEXT GOLDEN_EMBEDDING
"""

import re
import struct
import subprocess
import sys

from serve_embeddings_client import post


def main():
    serve, library, text, golden_path = sys.argv[1:5]
    golden = open(golden_path, "rb").read()
    golden = struct.unpack(f"<{len(golden) // 4}f", golden)
    server = subprocess.Popen([serve, library, "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    port = int(re.search(r":(\d+)$", banner).group(1))
    try:
        status, body = post(port, {"input": text})
        vector = body["data"][0]["embedding"]
        error = max(abs(a - b) for a, b in zip(vector, golden))
        print("one string:", status, "usage", body["usage"]["prompt_tokens"],
              "within 1e-4:", error < 1e-4)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
