#!/usr/bin/env python3
"""bench/serve_embeddings.py: embeddings/s of a BERT-base-shaped sentence
embedder (transformers' BertConfig() defaults: 12 layers, 768 wide; random
weights; mean pooling) through tfm-serve's /v1/embeddings at 1 and 8
concurrent clients, each sending one input a request, and through the
Python package's embed() one text a call and eight a call (one packed
@embed_batch call). Inputs are TOKENS token ids ([CLS] ... [SEP]). The
server packs concurrent requests' inputs into shared @embed_batch calls
(serve/EncoderCalls.h); the target is 8 clients >= 3x one client.

    source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 bench/serve_embeddings.py [--seconds 20] [--tokens 16]
"""
import argparse
import http.client
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_model(directory):
    if os.path.exists(os.path.join(directory, "modules.json")):
        return
    import torch
    import transformers as tf
    torch.manual_seed(0)
    model = tf.BertModel(tf.BertConfig(), add_pooling_layer=False).eval()
    model.save_pretrained(directory, safe_serialization=True)
    with open(os.path.join(directory, "modules.json"), "w") as f:
        json.dump([{"path": "", "type": "sentence_transformers.models.Transformer"},
                   {"path": "1_Pooling",
                    "type": "sentence_transformers.models.Pooling"}], f)
    os.makedirs(os.path.join(directory, "1_Pooling"), exist_ok=True)
    with open(os.path.join(directory, "1_Pooling", "config.json"), "w") as f:
        json.dump({"pooling_mode_mean_tokens": True}, f)


def inputs(count, tokens):
    rng = random.Random(1)
    return [[101] + [rng.randrange(1000, 30000) for _ in range(tokens - 2)] +
            [102] for _ in range(count)]


def serve_rate(port, clients, seconds, tokens):
    """Embeddings/s with `clients` threads, each one request at a time."""
    texts = inputs(64, tokens)
    done = [0] * clients
    stop = time.monotonic() + seconds

    def client(k):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        i = k
        while time.monotonic() < stop:
            connection.request("POST", "/v1/embeddings",
                               json.dumps({"input": texts[i % len(texts)]}),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                sys.exit(f"request failed: {response.status} {body[:200]}")
            done[k] += 1
            i += clients
        connection.close()

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,))
               for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / (time.monotonic() - start)


def metrics(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    return {k: int(v) for k, v in re.findall(r"^(tfm_encoder_\w+) (\d+)$",
                                             text, re.M)}


def python_rate(library, per_call, seconds, tokens):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tfmc
    model = tfmc.load(library)
    texts = inputs(64, tokens)
    model.embed(texts[:per_call])  # warm-up
    count, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        batch = [texts[(count + j) % len(texts)] for j in range(per_call)]
        model.embed(batch if per_call > 1 else batch[0])
        count += per_call
    return count / (time.monotonic() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args()
    model = os.path.join(args.work, "bert-base-embedder")
    os.makedirs(model, exist_ok=True)
    make_model(model)
    library = os.path.join(args.work, "libbertembed.so")
    subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), model, "-q",
                    "--emit=lib", "-o", library], check=True)
    server = subprocess.Popen([os.path.join(ROOT, "build", "bin", "tfm-serve"),
                               library, "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline()
    port = int(re.search(r":(\d+)$", banner.strip()).group(1))
    rates = {}
    try:
        serve_rate(port, 1, 2, args.tokens)  # warm-up
        for clients in (1, 8):
            before = metrics(port)
            rates[clients] = serve_rate(port, clients, args.seconds,
                                        args.tokens)
            after = metrics(port)
            calls = after["tfm_encoder_calls_total"] - before["tfm_encoder_calls_total"]
            served = after["tfm_encoder_inputs_total"] - before["tfm_encoder_inputs_total"]
            print(f"tfm-serve, {clients} client{'s' if clients > 1 else ''}: "
                  f"{rates[clients]:.1f} embeddings/s "
                  f"({served / max(calls, 1):.1f} inputs a call)", flush=True)
    finally:
        server.terminate()
        server.wait()
    print(f"8 clients / 1 client: {rates[8] / rates[1]:.2f}x (target >= 3x)")
    one = python_rate(library, 1, args.seconds, args.tokens)
    eight = python_rate(library, 8, args.seconds, args.tokens)
    print(f"Python embed(), 1 text a call: {one:.1f} embeddings/s")
    print(f"Python embed(), 8 texts a call: {eight:.1f} embeddings/s "
          f"({eight / one:.2f}x)")
    print(f"# {time.strftime('%Y-%m-%d')}, {args.tokens} tokens an input, "
          f"{os.cpu_count()} cores")


if __name__ == "__main__":
    main()
