"""Drives tfm-serve's constrained generation over loopback and prints one
line per check for FileCheck (tfm-serve-grammar.test).

  serve_grammar_client.py TFM_SERVE LIBRARY PERSON_GRAMMAR EXECUTABLE

`grammar` (GBNF) on /v1/completions: greedy text equal to the
executable's --grammar, sampled texts (temperature 1.5, several seeds,
eight requests at once, so that the engine batches requests of different
grammars) each a JSON object PERSON_GRAMMAR allows, streams equal to the
same requests whole; response_format json_object; what is refused.
"""
import json
import re
import subprocess
import sys
import threading

import jsonschema

from serve_client import post, start_server, stream_text

PROMPT = "Once upon a time"


def complete(port, **fields):
    status, payload = post(port, "/v1/completions",
                           dict({"prompt": PROMPT}, **fields))
    return status, json.loads(payload)


def person_ok(text):
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return (list(value) == ["name", "age", "pets"] and
            re.fullmatch(r"[A-Za-z][a-z ]{0,15}", value["name"]) is not None
            and isinstance(value["age"], int) and len(value["pets"]) <= 4)


def main():
    serve, library, person_path, executable = sys.argv[1:5]
    person = open(person_path).read()
    server, port = start_server(serve, library)
    try:
        words = 'root ::= (" " [a-z]+){3,8} "."'
        _, body = complete(port, grammar=words, max_tokens=60,
                           temperature=0)
        alone = subprocess.run([executable, "--prompt", PROMPT, "-n", "60",
                                "--grammar", words], capture_output=True,
                               text=True, check=True).stdout.rstrip("\n")
        print("greedy equals the executable:",
              PROMPT + body["choices"][0]["text"] == alone,
              "finish", body["choices"][0]["finish_reason"])

        results = [None] * 8

        def sample(i):
            results[i] = complete(port, grammar=person, max_tokens=120,
                                  temperature=1.5, seed=i + 1)[1]
        threads = [threading.Thread(target=sample, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        texts = [r["choices"][0]["text"] for r in results]
        print("sampled together:", sum(person_ok(t) for t in texts), "of 8",
              "valid,", len(set(texts)), "distinct, finish",
              sorted({r["choices"][0]["finish_reason"] for r in results}))
        stream, _, _, _ = stream_text(port, {"prompt": PROMPT, "grammar": person,
                                 "max_tokens": 120, "temperature": 1.5,
                                 "seed": 3})
        print("streamed equals whole:", stream == texts[2])

        _, body = complete(port, response_format={"type": "json_object"},
                           max_tokens=40, temperature=0)
        text = body["choices"][0]["text"]
        print("json_object starts an object:", text.lstrip().startswith("{"))
        _, plain = complete(port, response_format={"type": "text"},
                            max_tokens=16, temperature=0)
        _, free = complete(port, max_tokens=16, temperature=0)
        print("response_format text is unconstrained:",
              plain["choices"] == free["choices"])

        # A JSON schema (OpenAI's response_format), sampled: each output
        # validates against it (python3-jsonschema).
        schema = {"type": "object",
                  "properties": {
                      "name": {"type": "string", "maxLength": 12},
                      "age": {"type": "integer", "minimum": 0},
                      "mood": {"enum": ["happy", "sad", None]},
                      "tags": {"type": "array", "items": {"type": "string",
                                                          "maxLength": 6},
                               "maxItems": 3},
                      "born": {"type": "string", "format": "date"}},
                  "required": ["name", "mood"]}
        outputs = []
        for seed in range(6):
            _, body = complete(port, max_tokens=250, temperature=1.5,
                               seed=seed,
                               response_format={"type": "json_schema",
                                                "json_schema": {
                                                    "name": "person",
                                                    "schema": schema}})
            outputs.append(body["choices"][0])
        valid = 0
        for choice in outputs:
            try:
                jsonschema.validate(json.loads(choice["text"]), schema)
                valid += choice["finish_reason"] == "stop"
            except (ValueError, jsonschema.ValidationError) as e:
                print("invalid:", repr(choice["text"]), e)
        print("json_schema sampled:", valid, "of 6 valid")

        for fields in [{"grammar": 'root ::= "a" ('},
                       {"grammar": 'root ::= "\\q"'},
                       {"grammar": 42},
                       {"response_format": {"type": "json_schema",
                                            "json_schema": {"schema": {
                                                "type": "object",
                                                "properties": {"n": {
                                                    "type": "integer",
                                                    "multipleOf": 9}}}}}},
                       {"response_format": {"type": "json_schema"}},
                       {"response_format": {"type": "yaml"}},
                       {"response_format": "json"},
                       {"grammar": "root ::= \"a\"",
                        "response_format": {"type": "json_object"}}]:
            status, body = complete(port, max_tokens=4, **fields)
            print("refused:", status, body["error"]["param"],
                  body["error"]["message"])
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
