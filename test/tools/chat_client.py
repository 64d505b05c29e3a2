"""Drives tfm-serve's /v1/chat/completions over loopback and prints one
line per check for FileCheck (tfm-serve-chat.test).

  chat_client.py TFM_SERVE LIBRARY CONVERSATION_JSON

LIBRARY carries a chat template (LLaMA-2's, tfmc --chat-template);
CONVERSATION_JSON holds a conversation and the prompt ids transformers'
apply_chat_template makes of it with that template and the same tokenizer
(make_chat_template_goldens.py). Checks: the chat prompt has those ids
(its token count, and a greedy chat equal to a completion of the ids);
a stream's deltas (the first naming the role) equal the unstreamed
message; add_generation_prompt; what the template refuses and malformed
messages are 400s that say so.
"""

import json
import sys

from serve_client import next_event, open_stream, post, start_server


def chat(port, body):
    status, payload = post(port, "/v1/chat/completions", body)
    return status, json.loads(payload)


def stream_chat(port, body):
    connection, response = open_stream(port, body, "/v1/chat/completions")
    roles, text, finish, usage = [], "", None, None
    while True:
        data = next_event(response)
        if data is None or data == "[DONE]":
            break
        chunk = json.loads(data)
        assert chunk["object"] == "chat.completion.chunk", chunk
        delta = chunk["choices"][0]["delta"]
        roles.append(delta.get("role"))
        text += delta.get("content", "")
        finish = chunk["choices"][0]["finish_reason"] or finish
        usage = chunk.get("usage", usage)
    connection.close()
    return roles, text, finish, usage


def main():
    serve, library, conversation_path = sys.argv[1:4]
    with open(conversation_path) as f:
        golden = json.load(f)
    server, port = start_server(serve, library)
    try:
        run_checks(port, golden["messages"], golden["prompt_ids"])
    finally:
        server.terminate()
        server.wait(timeout=30)


def run_checks(port, messages, prompt_ids):
    greedy = {"max_tokens": 24, "temperature": 0}
    status, body = chat(port, dict(greedy, messages=messages))
    choice = body["choices"][0]
    _, completion = post(port, "/v1/completions",
                         dict(greedy, prompt=prompt_ids))
    completion = json.loads(completion)
    print("chat:", status, body["object"], choice["message"]["role"],
          choice["finish_reason"], "prompt tokens",
          body["usage"]["prompt_tokens"], "transformers'", len(prompt_ids),
          "text equals the completion of transformers' ids:",
          choice["message"]["content"] == completion["choices"][0]["text"])

    sampled = {"messages": messages, "max_tokens": 30, "seed": 7,
               "temperature": 0.8}
    _, whole = chat(port, sampled)
    roles, text, finish, usage = stream_chat(port, dict(sampled, stream=True))
    print("stream: roles", roles[0], "then", set(roles[1:]),
          "text equals unstreamed:",
          text == whole["choices"][0]["message"]["content"],
          "finish", finish, "usage", usage == whole["usage"])

    # Three messages, no generation prompt: 95 ids with transformers.
    _, body = chat(port, dict(greedy, messages=messages[:3],
                              add_generation_prompt=False))
    print("no generation prompt: prompt tokens", body["usage"]["prompt_tokens"])

    # A content given as text parts is their text.
    parts = [{"type": "text", "text": "A dog"}, {"type": "text", "text": "and a cat"}]
    _, as_parts = chat(port, dict(greedy, messages=[{"role": "user", "content": parts}]))
    _, as_text = chat(port, dict(greedy, messages=[
        {"role": "user", "content": "A dog\nand a cat"}]))
    print("text parts equal their text:", as_parts["choices"] == as_text["choices"])

    for body in [
        {"messages": [{"role": "user", "content": "Hi"},
                      {"role": "user", "content": "Hi again"}]},
        {"messages": []},
        {"prompt": "Hi"},
        {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "x"}}]}]},
        {"messages": [{"content": "no role"}]},
        {"messages": ["Hi"]},
        {"messages": [{"role": "user", "content": "Hi"}],
         "add_generation_prompt": "yes"},
        {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
         "max_completion_tokens": 4},
        {"messages": [{"role": "user", "content": "Hi"}],
         "stream_options": {"include_usage": 1}},
    ]:
        status, payload = chat(port, body)
        print("refused:", status, payload["error"]["message"])


if __name__ == "__main__":
    main()
