"""Drives tfm-serve's encoder endpoints with Python's HTTP client and prints
one line per check for FileCheck (tfm-serve-encoders.test):

  serve_encoders_client.py rerank TFM_SERVE LIBRARY SCORES_JSON
  serve_encoders_client.py classify TFM_SERVE LIBRARY EXECUTABLE
  serve_encoders_client.py embed TFM_SERVE LIBRARY EXECUTABLE

rerank: a one-label cross-encoder's /rerank and /v1/rerank against
transformers' scores (make_reranker_fixture.py), and its /classify.
classify: a three-label classifier's /classify against the executable's
logits for the same texts. embed: a BERT sentence embedder (token types:
zeros) whose inputs, from one request or from concurrent ones, are packed
into @embed_batch calls (/metrics counts them), each vector equal to the
executable's @embed of that text alone.
"""

import http.client
import json
import math
import re
import struct
import subprocess
import sys
import threading

from serve_process import start


def request(port, method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    payload = None if body is None else (
        body if isinstance(body, str) else json.dumps(body))
    connection.request(method, path, payload,
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    try:
        return response.status, json.loads(text)
    except json.JSONDecodeError:
        return response.status, text


def post(port, path, body):
    return request(port, "POST", path, body)


def refused(port, path, label, body):
    status, answer = post(port, path, body)
    error = answer["error"] if isinstance(answer, dict) else {}
    print(f"refused, {label}:", status, error.get("message"),
          "param", error.get("param"))


def outputs(executable, text, pair=None):
    command = [executable, "--text", text, "--format", "f32"]
    if pair is not None:
        command += ["--text-pair", pair]
    data = subprocess.run(command, capture_output=True, check=True).stdout
    return struct.unpack(f"<{len(data) // 4}f", data)


def metrics(port):
    status, text = request(port, "GET", "/metrics")
    return {name: int(value) for name, value in
            re.findall(r"^(tfm_encoder_\w+) (\d+)$", text, re.M)}


def rerank(port, scores_path):
    golden = json.load(open(scores_path))
    query, documents, scores = (golden["query"], golden["documents"],
                                golden["scores"])
    status, body = post(port, "/rerank", {"model": "reranker", "query": query,
                                          "documents": documents})
    results = body["results"]
    expected = sorted(range(len(scores)), key=lambda i: -scores[i])
    error = max(abs(r["relevance_score"] - scores[r["index"]])
                for r in results)
    print("rerank:", status, body["object"], len(results), "results",
          "best first as transformers':",
          [r["index"] for r in results] == expected,
          "within 1e-4:", error < 1e-4,
          "usage", body["usage"]["total_tokens"] > 0)
    status, body = post(port, "/v1/rerank", {
        "query": query, "documents": [{"text": d} for d in documents],
        "top_n": 2, "return_documents": True})
    print("/v1/rerank top_n 2 with documents:", status,
          [(r["index"], r["document"]["text"]) for r in body["results"]] ==
          [(i, documents[i]) for i in expected[:2]])
    status, body = post(port, "/classify", {"input": [query]})
    item = body["data"][0]
    print("classify a cross-encoder:", status, item["label"],
          item["num_classes"], len(item["probs"]))
    refused(port, "/rerank", "no query", {"documents": ["a"]})
    refused(port, "/rerank", "no documents", {"query": "a", "documents": []})
    refused(port, "/rerank", "bad document", {"query": "a",
                                              "documents": ["a", 7]})
    refused(port, "/rerank", "top_n", {"query": "a", "documents": ["a"],
                                       "top_n": 0})
    refused(port, "/rerank", "return_documents", {
        "query": "a", "documents": ["a"], "return_documents": "yes"})
    refused(port, "/rerank", "too long", {"query": "a",
                                          "documents": ["ok", "b" * 80]})
    refused(port, "/rerank", "unknown field", {"query": "a",
                                               "documents": ["a"], "k": 1})
    refused(port, "/rerank", "another model", {"model": "gpt-4", "query": "a",
                                               "documents": ["a"]})
    status, _ = post(port, "/v1/embeddings", {"input": "a"})
    print("embeddings on a cross-encoder:", status)


def classify(port, executable):
    texts = ["good day", "bad", "the cat sat."]
    status, body = post(port, "/classify", {"model": "classifier", "input": texts})
    error, labels = 0.0, []
    for item in body["data"]:
        logits = outputs(executable, texts[item["index"]])
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        probs = [e / sum(exps) for e in exps]
        error = max(error, max(abs(a - b) for a, b in zip(item["probs"], probs)))
        labels.append(item["label"])
    print("classify:", status, body["object"], len(body["data"]), "labels",
          labels, "num_classes", body["data"][0]["num_classes"],
          "probabilities within 1e-5 of the executable's:", error < 1e-5,
          "usage", body["usage"]["prompt_tokens"])
    status, body = post(port, "/classify", {"input": [2, 17, 42, 3]})
    print("token ids:", status, len(body["data"]))
    refused(port, "/classify", "no input", {"user": "u"})
    refused(port, "/classify", "empty", {"input": []})
    refused(port, "/classify", "id out of range", {"input": [2, 999, 3]})
    status, _ = post(port, "/rerank", {"query": "a", "documents": ["b"]})
    print("rerank on a three-label classifier:", status)


def embed(port, executable):
    texts = ["good day", "bad", "the cat sat.", "why?", "no", "yes, fine",
             "ok ok ok", "a"]
    alone = {t: outputs(executable, t) for t in texts}

    def close(vector, text):
        return max(abs(a - b) for a, b in zip(vector, alone[text])) < 1e-5

    before = metrics(port)
    status, body = post(port, "/v1/embeddings", {"input": texts[:5]})
    after = metrics(port)
    print("five inputs:", status, len(body["data"]), "equal alone:",
          all(close(d["embedding"], texts[d["index"]]) for d in body["data"]),
          "calls", after["tfm_encoder_calls_total"] -
          before["tfm_encoder_calls_total"],
          "inputs", after["tfm_encoder_inputs_total"] -
          before["tfm_encoder_inputs_total"])
    # Concurrent requests, one input each, some packed together.
    answers = [None] * 32

    def client(k):
        answers[k] = post(port, "/v1/embeddings",
                          {"input": texts[k % len(texts)]})

    threads = [threading.Thread(target=client, args=(k,)) for k in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("32 concurrent requests:", {status for status, _ in answers},
          "each equal alone:",
          all(close(body["data"][0]["embedding"], texts[k % len(texts)])
              for k, (_, body) in enumerate(answers)))
    total = metrics(port)
    print("inputs counted:", total["tfm_encoder_inputs_total"] -
          after["tfm_encoder_inputs_total"])


def main():
    mode, serve, library, reference = sys.argv[1:5]
    server, port = start(serve, library)
    try:
        {"rerank": rerank, "classify": classify, "embed": embed}[mode](
            port, reference)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
