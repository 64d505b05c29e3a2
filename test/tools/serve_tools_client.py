"""Drives tfm-serve's tools and tool_calls over loopback, through real
models' chat templates, and prints one line per check for FileCheck
(tfm-serve-tools.test).

  serve_tools_client.py TFM_SERVE LIBRARY TEMPLATE_DIR PLAIN NAME...

LIBRARY is a random-weight model (its output adversarial text) whose
vocabulary has the markers the templates' formats use. For each template
NAME (TEMPLATE_DIR/NAME.jinja):
- a conversation with an assistant's call and the tool's answer renders
  (/apply-template) with the call's arguments as JSON and the tools listed;
- tool_choice "required" sampled at temperature 1.5 under six seeds gives
  calls of listed functions whose arguments python3-jsonschema validates
  against the function's parameters;
- a named function is the one called; parallel_tool_calls false gives one
  call;
- the streamed deltas of a request reassemble into the calls of the same
  request whole;
- tool_choice "auto" answers (content, or valid calls).
With the first template, malformed tools, tool choices and calls are
400s naming the field; with PLAIN (a template without tools) a request
with tools is refused.
"""
import json
import sys

import jsonschema

from serve_client import next_event, open_stream, post, start_server

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 12,
                     "description": "the city"},
            "unit": {"enum": ["c", "f"], "description": "the unit"}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two integers",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "integer", "description": "a term"},
            "b": {"type": "integer", "description": "a term"}},
            "required": ["a", "b"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "book_table", "description": "Books a table",
        "parameters": {"$defs": {"guest": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 8},
            "age": {"type": "integer", "minimum": 0}},
            "required": ["name"]}},
            "type": "object", "properties": {
                "date": {"type": "string", "format": "date",
                         "description": "the day"},
                "guests": {"type": "array", "items": {"$ref": "#/$defs/guest"},
                           "maxItems": 3, "description": "who comes"}},
            "required": ["date", "guests"]}}},
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]
# Mistral's templates take call ids of 9 letters and digits.
ANSWERED = QUESTION + [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "abc123XYZ", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "abc123XYZ", "name": "get_weather",
     "content": "22 degrees and sunny"}]


def chat(port, **fields):
    body = dict({"messages": QUESTION, "tools": TOOLS, "max_tokens": 400,
                 "temperature": 1.5}, **fields)
    status, payload = post(port, "/v1/chat/completions", body)
    return status, json.loads(payload)


def valid_call(call):
    """Whether a tool_calls entry names a listed function and its arguments
    are JSON its parameters accept."""
    if call.get("type") != "function" or not call.get("id"):
        return False
    name = call["function"]["name"]
    if name not in SCHEMAS:
        return False
    try:
        jsonschema.validate(json.loads(call["function"]["arguments"]),
                            SCHEMAS[name],
                            format_checker=jsonschema.FormatChecker())
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def streamed_calls(port, **fields):
    """A streamed chat's calls, reassembled from their deltas by index, and
    its finish reason."""
    body = dict({"messages": QUESTION, "tools": TOOLS, "max_tokens": 400,
                 "temperature": 1.5}, **fields)
    connection, response = open_stream(port, body, "/v1/chat/completions")
    calls, finish = {}, None
    while True:
        data = next_event(response)
        if data is None or data == "[DONE]":
            break
        choice = json.loads(data)["choices"][0]
        finish = choice["finish_reason"] or finish
        for delta in choice["delta"].get("tool_calls", []):
            call = calls.setdefault(delta["index"], {"name": "", "arguments": ""})
            function = delta.get("function", {})
            call["name"] += function.get("name", "")
            call["arguments"] += function.get("arguments", "")
    connection.close()
    return [calls[i] for i in sorted(calls)], finish


def refusals(port):
    def refused(**fields):
        status, body = chat(port, **fields)
        error = body.get("error", {})
        print("refused:", status, error.get("param"), error.get("message"))
    refused(tool_choice={"type": "function", "function": {"name": "rm"}})
    refused(tool_choice="always")
    refused(tools=[{"type": "function", "function": {"name": "ls -l"}}])
    refused(tools=[{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {
            "n": {"type": "number", "multipleOf": 3}}}}}],
            tool_choice="required")
    refused(tool_choice="required", response_format={"type": "json_object"})
    refused(tools=None, tool_choice="required")
    refused(messages=QUESTION + [{"role": "assistant", "tool_calls": [
        {"id": "abc123XYZ", "type": "function", "function": {
            "name": "add", "arguments": "{\"a\": 1"}}]}])


def check_template(serve, library, path, refuse):
    server, port = start_server(serve, library, "--chat-template", path)
    print(server.stdout.readline().strip())  # the tool call format
    try:
        status, payload = post(port, "/apply-template",
                               {"messages": ANSWERED, "tools": TOOLS})
        prompt = json.loads(payload).get("prompt", "") if status == 200 else ""
        print("rendered:", status, "| arguments as JSON:",
              '"city": "Paris"' in prompt, "| tool's answer:",
              "22 degrees and sunny" in prompt, "| tools listed:",
              "Current weather in a city" in prompt and "book_table" in prompt)
        status, body = chat(port, messages=ANSWERED, max_tokens=4)
        print("round trip:", status, body.get("choices", [{}])[0].get(
            "finish_reason"))

        sampled, valid, names = 0, 0, set()
        for seed in range(1, 7):
            status, body = chat(port, tool_choice="required", seed=seed)
            choice = body["choices"][0]
            calls = choice["message"].get("tool_calls", [])
            sampled += 1
            names.update(c["function"]["name"] for c in calls)
            if (status == 200 and calls and all(map(valid_call, calls)) and
                    choice["finish_reason"] in ("tool_calls", "length")):
                valid += 1
        print(f"required: {valid} of {sampled} valid, functions called:",
              len(names) > 1)

        named = [chat(port, seed=seed, tool_choice={
            "type": "function", "function": {"name": "book_table"}})[1]
            ["choices"][0] for seed in (1, 2, 3)]
        print("named: all book_table:",
              all(c["finish_reason"] == "tool_calls" and
                  len(c["message"]["tool_calls"]) == 1 and
                  c["message"]["tool_calls"][0]["function"]["name"] ==
                  "book_table" and valid_call(c["message"]["tool_calls"][0])
                  for c in named))
        single = [chat(port, seed=seed, tool_choice="required",
                       parallel_tool_calls=False)[1]["choices"][0]
                  for seed in (4, 5)]
        print("not parallel: one call each:",
              all(len(c["message"]["tool_calls"]) == 1 for c in single))

        _, whole = chat(port, tool_choice="required", seed=3)
        message = whole["choices"][0]["message"]
        expected = [{"name": c["function"]["name"],
                     "arguments": c["function"]["arguments"]}
                    for c in message.get("tool_calls", [])]
        calls, finish = streamed_calls(port, tool_choice="required", seed=3)
        print("streamed equals whole:", calls == expected and bool(calls),
              "| arguments parse:",
              all(isinstance(json.loads(c["arguments"]), dict) for c in calls),
              "| finish", finish == whole["choices"][0]["finish_reason"])

        answered = 0
        for seed in (1, 2, 3):
            status, body = chat(port, seed=seed, max_tokens=60)
            message = body["choices"][0]["message"]
            if status == 200 and (message.get("content") is not None or
                                  all(map(valid_call,
                                          message.get("tool_calls", [])))):
                answered += 1
        print(f"auto: {answered} of 3 answered")
        if refuse:
            refusals(port)
    finally:
        server.terminate()
        server.wait(timeout=30)


def main():
    serve, library, directory, plain = sys.argv[1:5]
    for i, name in enumerate(sys.argv[5:]):
        check_template(serve, library, f"{directory}/{name}.jinja", i == 0)
    server, port = start_server(serve, library, "--chat-template", plain)
    try:
        status, body = chat(port)
        print("plain template refused:", status, body["error"]["message"])
        status, body = chat(port, tool_choice="none")
        print("plain template, tool_choice none:", status)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
