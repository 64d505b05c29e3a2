"""Drives tfm-serve's run-time LoRA adapters over loopback and prints one
line per check for FileCheck (tfm-serve-lora.test).

  serve_lora_client.py TFM_SERVE SLOTS_LIBRARY PLAIN_DIR LINEAR_DIR
                       BASE_EXE PLAIN_EXE LINEAR_EXE

The server loads two adapters (--lora plain=PLAIN_DIR:0.5 --lora
linear=LINEAR_DIR). A request names one as its `lora` or as its `model`;
its greedy text is then the merged model's (PLAIN_EXE, LINEAR_EXE), and
without one the base model's (BASE_EXE), alone or nine at once mixing
both adapters and none in the engine's steps. /v1/models lists them.
"""
import json
import subprocess
import sys
import threading

from serve_client import get, post, start_server

PROMPT = "Tom had a ball. Tom"


def complete(port, **fields):
    status, payload = post(port, "/v1/completions",
                           dict({"prompt": PROMPT, "max_tokens": 40,
                                 "temperature": 0}, **fields))
    return status, json.loads(payload)


def alone(executable):
    return subprocess.run([executable, "--prompt", PROMPT, "-n", "40"],
                          capture_output=True, text=True,
                          check=True).stdout.rstrip("\n")[len(PROMPT):]


def main():
    serve, library, plain, linear = sys.argv[1:5]
    base_exe, plain_exe, linear_exe = sys.argv[5:8]
    expected = {None: alone(base_exe), "plain": alone(plain_exe),
                "linear": alone(linear_exe)}
    print("the adapters move the text:",
          len(set(expected.values())) == 3)
    server, port = start_server(serve, library, "--lora",
                                f"plain={plain}:0.5", "--lora",
                                f"linear={linear}")
    try:
        _, _, listing = get(port, "/v1/models")
        models = json.loads(listing)["data"]
        print("models:", [(m["id"], m.get("parent")) for m in models])
        for name in (None, "plain", "linear"):
            fields = {"lora": name} if name else {}
            _, body = complete(port, **fields)
            print(f"lora {name}: equals the merged model:",
                  body["choices"][0]["text"] == expected[name])
        _, body = complete(port, model="linear")
        print("model 'linear' equals the merged model:",
              body["choices"][0]["text"] == expected["linear"],
              "answered as", body["model"])
        _, body = complete(port, lora="plain")
        print("lora 'plain' answered as", body["model"])

        names = [None, "plain", "linear"] * 3
        results = [None] * len(names)

        def run(i):
            fields = {"lora": names[i]} if names[i] else {}
            results[i] = complete(port, **fields)[1]["choices"][0]["text"]
        threads = [threading.Thread(target=run, args=(i,))
                   for i in range(len(names))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        same = sum(text == expected[name]
                   for text, name in zip(results, names))
        print(f"mixed together: {same} of {len(names)} equal their own")

        for fields in ({"lora": "sql"}, {"lora": 3},
                       {"lora": "plain", "model": "linear"},
                       {"model": "sql"}):
            status, body = complete(port, **fields)
            print("refused:", status, body["error"]["message"])
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
